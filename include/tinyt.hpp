// tinyt: tinygrad's deep-learning compiler as a header-only C++20 library.
// This is the one include; it pulls in every public header.
#pragma once

// the IR: dtypes, UOps, the rewrite engine, the symbolic engine
#include "tinyt/error.hpp"
#include "tinyt/dtype.hpp"
#include "tinyt/uop.hpp"
#include "tinyt/pattern.hpp"
#include "tinyt/alu.hpp"
#include "tinyt/bounds.hpp"
#include "tinyt/linear.hpp"
#include "tinyt/symbolic.hpp"
#include "tinyt/valid.hpp"
#include "tinyt/shape.hpp"

// devices and backends
#include "tinyt/helpers.hpp"
#include "tinyt/device.hpp"
#include "tinyt/backend/dlopen.hpp"
#include "tinyt/backend/cpu_cc.hpp"

// the pipeline: tensor graph -> schedule -> codegen -> renderer -> run
#include "tinyt/graph.hpp"
#include "tinyt/schedule/lower.hpp"
#include "tinyt/schedule/schedule.hpp"
#include "tinyt/codegen/linearize.hpp"
#include "tinyt/renderer/cstyle.hpp"
#include "tinyt/realize.hpp"

// the Tensor front end
#include "tinyt/tensor.hpp"
#include "tinyt/ops/movement.hpp"
#include "tinyt/ops/elementwise.hpp"
#include "tinyt/expr.hpp"
#include "tinyt/ops/reduce.hpp"
#include "tinyt/ops/creation.hpp"
#include "tinyt/ops/assign.hpp"
#include "tinyt/ops/combine.hpp"
#include "tinyt/ops/indexing.hpp"
#include "tinyt/ops/random.hpp"
#include "tinyt/ops/linalg.hpp"
#include "tinyt/ops/nn.hpp"
#include "tinyt/gradient.hpp"

// nn: reflection over models (state dicts), layers, optimizers; files: safetensors, datasets
#include "tinyt/nn/state.hpp"
#include "tinyt/nn/layers.hpp"
#include "tinyt/nn/optim.hpp"
#include "tinyt/nn/safetensors.hpp"
#include "tinyt/nn/datasets.hpp"
