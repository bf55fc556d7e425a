// tinyt: tinygrad's deep-learning compiler as a header-only C++20 library.
// This is the one include. It declares the public API; the engine's definitions come with it in
// the one file that defines TINYT_IMPLEMENTATION (or in the tinyt::tinyt library), or in every
// file with TINYT_HEADER_ONLY (tinyt/config.hpp).
#pragma once

#include "tinyt/config.hpp"
#include "tinyt/version.hpp"

// the IR a tensor is made of: dtypes, UOps, shapes
#include "tinyt/error.hpp"
#include "tinyt/dtype.hpp"
#include "tinyt/uop.hpp"
#include "tinyt/shape.hpp"

// settings, counters, devices
#include "tinyt/helpers.hpp"
#include "tinyt/device.hpp"
#include "tinyt/dist.hpp"
#include "tinyt/profile.hpp"
#include "tinyt/viz.hpp"

// the Tensor front end and its expression templates
#include "tinyt/tensor.hpp"
#include "tinyt/expr.hpp"
#include "tinyt/static_tensor.hpp"
#include "tinyt/jit.hpp"

// nn: reflection over models (state dicts), layers, optimizers; files: safetensors, datasets
#include "tinyt/nn/state.hpp"
#include "tinyt/nn/layers.hpp"
#include "tinyt/nn/optim.hpp"
#include "tinyt/nn/safetensors.hpp"
#include "tinyt/nn/gguf.hpp"
#include "tinyt/nn/datasets.hpp"

#if TINYT_DEFINES_ENGINE
#include "tinyt/implementation.hpp"
#else
namespace tinyt::inline v0::link_check {
// Defined where the implementation is compiled (config.hpp). Every file that includes tinyt.hpp
// calls it from a cold function of its own, so a program without the implementation fails to link
// with its name in the first error, and one with two implementations fails with "multiple
// definition" of it.
int define_TINYT_IMPLEMENTATION_in_exactly_one_file_or_link_tinyt();
[[gnu::used, gnu::cold]] static int implementation_is_linked() {
  return define_TINYT_IMPLEMENTATION_in_exactly_one_file_or_link_tinyt();
}
}  // namespace tinyt::inline v0::link_check
#endif
