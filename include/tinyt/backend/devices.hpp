// The devices tinyt builds in (CPU, CL, CUDA, EMU, WEBGPU), registered by kind, and the one lookup from a
// device name to its parts. A program may register more kinds with register_device.
#pragma once

#include "../device.hpp"
#include "compiled.hpp"
#include "cpu.hpp"
#include "cuda.hpp"
#include "emu.hpp"
#include "opencl.hpp"
#include "webgpu.hpp"

namespace tinyt::inline v0 {
namespace backend {

/// The device named `name` ("CPU", "cl:1"), opened at first use; DeviceError when it cannot be.
inline Device& device(const std::string& name) {
  static const bool builtin = register_device("CPU", open_cpu) && register_device("CL", open_opencl) &&
                              register_device("CUDA", open_cuda) &&
                              register_device("EMU", open_emu) && register_device("WEBGPU", open_webgpu);
  (void)builtin;
  // the device this thread asked for last, without parsing or locking: devices live for the
  // process ("" is the default device, which a Context may change: never remembered)
  thread_local std::string last_name;
  thread_local Device* last = nullptr;
  if (last && !name.empty() && name == last_name) return *last;
  const std::string canonical = ::tinyt::Device::canonicalize(name);
  if (::tinyt::Device::is_multi(canonical))
    throw DeviceError(::tinyt::detail::cat("device '", name, "' names several devices; memory and kernels are on one"));
  Device& d = open_device(::tinyt::Device::kind(canonical), ::tinyt::Device::index(canonical));
  if (!name.empty()) last_name = name, last = &d;
  return d;
}

}  // namespace backend
}  // namespace tinyt::inline v0
