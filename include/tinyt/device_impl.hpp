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

TINYT_INLINE void Device::synchronize(const std::string& name) {
  backend::device(canonicalize(name)).synchronize();
}

}  // namespace tinyt::inline v0
