// The definitions of everything tinyt.hpp declares. tinyt.hpp includes this where
// TINYT_IMPLEMENTATION (one file of a program, or the tinyt::tinyt library) or TINYT_HEADER_ONLY
// is defined; nothing else includes it.
#pragma once

#include "config.hpp"
#if !TINYT_DEFINES_ENGINE
#error "tinyt/implementation.hpp is compiled where TINYT_IMPLEMENTATION or TINYT_HEADER_ONLY is defined; include <tinyt.hpp>"
#endif

#include "internals.hpp"

// the IR and tensors
#include "uop_impl.hpp"
#include "shape_impl.hpp"
#include "tensor_impl.hpp"
#include "device_impl.hpp"
#include "dist_impl.hpp"
#include "profile_impl.hpp"
#include "viz_impl.hpp"

// the op families of Tensor and their gradients
#include "ops/movement.hpp"
#include "ops/elementwise.hpp"
#include "ops/reduce.hpp"
#include "ops/creation.hpp"
#include "engine/tensors_impl.hpp"
#include "engine/jit_impl.hpp"
#include "ops/assign.hpp"
#include "ops/combine.hpp"
#include "ops/indexing.hpp"
#include "ops/random.hpp"
#include "ops/linalg.hpp"
#include "ops/nn.hpp"
#include "ops/interpolate.hpp"
#include "gradient.hpp"

// nn
#include "nn/optim_impl.hpp"
#include "nn/safetensors_impl.hpp"
#include "nn/gguf_impl.hpp"
#include "nn/datasets_impl.hpp"
