// Device names and the default device.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "error.hpp"

namespace tinyt::inline v0 {

/// Device names and the default device.
struct Device {
  /// The device names tinyt knows, whether or not they can run here.
  static const std::vector<std::string>& known() {
    static const std::vector<std::string> names{"CPU", "CL", "CUDA"};
    return names;
  }
  /// "cpu", "CPU:0" -> "CPU"; an unknown name is a DeviceError.
  static std::string canonicalize(const std::string& name) {
    std::string s = name.empty() ? default_device() : name;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ":0") == 0) s.resize(s.size() - 2);
    if (std::find(known().begin(), known().end(), s) == known().end())
      throw DeviceError(detail::cat("unknown device '", name, "'; tinyt knows CPU, CL and CUDA"));
    return s;
  }
  /// The devices that can run here.
  static std::vector<std::string> list() { return {"CPU"}; }
  /// Throws DeviceError unless `name` can run here.
  static void require(const std::string& name) {
    const std::string d = canonicalize(name);
    const auto ok = list();
    if (std::find(ok.begin(), ok.end(), d) == ok.end())
      throw DeviceError(detail::cat("device ", d, " cannot run here: no backend for it in this build (Device::list() has CPU)"));
  }
  /// The default device: $DEV if set, else CPU.
  static std::string default_device() {
    const char* dev = std::getenv("DEV");
    return dev && *dev ? canonicalize(dev) : "CPU";
  }
};

}  // namespace tinyt::inline v0
