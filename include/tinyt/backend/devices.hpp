// The devices tinyt builds in (CPU, CL, CUDA), registered by kind, and the one lookup from a
// device name to its parts. A program may register more kinds with register_device.
#pragma once

#include "../device.hpp"
#include "compiled.hpp"
#include "cpu.hpp"
#include "cuda.hpp"
#include "opencl.hpp"

namespace tinyt::inline v0 {
namespace backend {

/// The device named `name` ("CPU", "cl:1"), opened at first use; DeviceError when it cannot be.
inline Device& device(const std::string& name) {
  static const bool builtin = register_device("CPU", open_cpu) && register_device("CL", open_opencl) &&
                              register_device("CUDA", open_cuda);
  (void)builtin;
  const std::string canonical = ::tinyt::Device::canonicalize(name);
  return open_device(::tinyt::Device::kind(canonical), ::tinyt::Device::index(canonical));
}

}  // namespace backend
}  // namespace tinyt::inline v0
