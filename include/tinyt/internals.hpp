// The compiler behind the public API: the rewrite and symbolic engines, the tensor graph, the
// scheduler, codegen, renderers, backends and the realize loop. For white-box tests and tools;
// a program needs only tinyt.hpp. Every function here is inline, so any file may include this
// (it costs what header-only mode costs); the definitions of what tinyt.hpp declares are not
// here but in implementation.hpp. Include tinyt.hpp first for the public API.
#pragma once

// utilities every stage may use
#include "support.hpp"
#include "json.hpp"

// the IR's engines: rewrite rules, constant folding, bounds, the symbolic simplifier
#include "pattern.hpp"
#include "alu.hpp"
#include "bounds.hpp"
#include "linear.hpp"
#include "symbolic.hpp"
#include "valid.hpp"

// the pipeline: tensor graph -> schedule -> codegen -> renderer -> run
#include "buffer.hpp"
#include "graph.hpp"
#include "schedule/lower.hpp"
#include "schedule/schedule.hpp"
#include "codegen/linearize.hpp"
#include "renderer/cstyle.hpp"
#include "renderer/cuda.hpp"
#include "renderer/opencl.hpp"
#include "renderer/wgsl.hpp"
#include "engine/realize.hpp"
#include "backend/mpi.hpp"
#include "viz/html.hpp"

// the random cipher under Tensor::rand and friends
#include "ops/threefry.hpp"

// file formats behind nn::state and nn::datasets
#include "nn/file_io.hpp"
