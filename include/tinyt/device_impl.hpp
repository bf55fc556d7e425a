// What can run here: the device names of device.hpp, asked of the backends.
#pragma once

#include "backend/devices.hpp"
#include "device.hpp"

namespace tinyt::inline v0 {

TINYT_INLINE std::vector<std::string> Device::list() {
  std::vector<std::string> out;
  for (const std::string& kind : known()) {
    try {
      backend::device(kind);
      out.push_back(kind);
    } catch (const Error&) {
      // not here: require() says why
    }
  }
  return out;
}

TINYT_INLINE void Device::require(const std::string& name) {
  backend::device(canonicalize(name));  // opens it, or throws DeviceError saying why not
}

TINYT_INLINE bool Device::holds_wide_types(const std::string& device) {
  for (const std::string& d : split(device))
    if (!backend::device(d).target().wide_types) return false;
  return true;
}

TINYT_INLINE void Device::require_dtype(const std::string& device, DType dtype, const std::string& op) {
  if (dtype.is_index() || dtype.scalar().itemsize() != 8) return;  // (only 64-bit types are missing anywhere)
  for (const std::string& d : split(device))
    if (!backend::device(d).target().wide_types)
      throw DeviceError(detail::cat(op, ": ", d, " has no ", dtype.name(), " (WebGPU has no 64-bit types: use float32 or int32)"));
}

TINYT_INLINE void Device::synchronize(const std::string& name) {
  backend::device(canonicalize(name)).synchronize();
}

}  // namespace tinyt::inline v0
