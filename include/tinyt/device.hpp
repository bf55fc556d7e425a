// Device names and the default device. The devices themselves (memory, compilers, launching)
// are the backends' (include/tinyt/backend/); this header only names them.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "config.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "helpers.hpp"

namespace tinyt::inline v0 {

/// Device names and the default device. A name is a kind ("CPU", "CL", "CUDA", "EMU", "WEBGPU"), optionally with
/// an index ("CL:1"); index 0 is the kind alone.
struct Device {
  /// The device kinds tinyt knows, whether or not they can run here.
  static const std::vector<std::string>& known() {
    static const std::vector<std::string> names{"CPU", "CL", "CUDA", "EMU", "WEBGPU"};
    return names;
  }
  /// The device new tensors go to: $DEV when the program started ("CPU" if unset); assignable.
  static inline std::string DEFAULT = [] {
    const char* dev = std::getenv("DEV");
    std::string s = dev && *dev ? dev : "CPU";
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
    return s;
  }();
  /// "cpu", "CPU:0" -> "CPU"; "cl:1" -> "CL:1"; a list "CPU:0, CPU:1" -> "CPU,CPU:1" (the devices of
  /// a sharded tensor). An unknown kind, a bad index or a device listed twice is a DeviceError.
  static std::string canonicalize(const std::string& name) {
    if (name.find(',') == std::string::npos) return canonicalize_one(name);
    std::vector<std::string> seen;
    for (const std::string& part : split_list(name)) {
      if (std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isspace(c); }))
        throw DeviceError(detail::cat("devices '", name, "': an empty name in the list"));
      std::string one = canonicalize_one(part);
      if (std::find(seen.begin(), seen.end(), one) != seen.end())
        throw DeviceError(detail::cat("devices '", name, "': ", one, " is listed twice"));
      seen.push_back(std::move(one));
    }
    std::string out;
    for (const std::string& one : seen) out += (out.empty() ? "" : ",") + one;
    return out;
  }
  /// The devices of a canonical name: {"CPU", "CPU:1"} for "CPU,CPU:1", {"CL"} for "CL".
  static std::vector<std::string> split(const std::string& canonical) { return split_list(canonical); }
  /// Whether a canonical name lists several devices (a sharded tensor's).
  static bool is_multi(const std::string& canonical) { return canonical.find(',') != std::string::npos; }
  /// The kind of a canonical name ("CL:1" -> "CL") and its index (1).
  static std::string kind(const std::string& canonical) { return canonical.substr(0, canonical.find(':')); }
  static int index(const std::string& canonical) {
    const size_t colon = canonical.find(':');
    return colon == std::string::npos ? 0 : std::stoi(canonical.substr(colon + 1));
  }
  /// The devices that can run here (each kind's first device that opens), CPU first.
  static std::vector<std::string> list();
  /// Throws DeviceError unless `name` can run here, saying why not (the libraries tried).
  static void require(const std::string& name);
  /// Throws DeviceError, naming `op`, where a device of `device` (a canonical name or list) has no
  /// `dtype` (WEBGPU: no float64, int64 or uint64).
  static void require_dtype(const std::string& device, DType dtype, const std::string& op);
  /// Whether every device of `device` (a canonical name or list) holds 64-bit types.
  static bool holds_wide_types(const std::string& device);
  /// The widest integer dtype every device of `device` holds: int64, or int32 (WEBGPU). What
  /// integer sums and products accumulate in, and the dtype of indices tinyt computes there.
  static DType widest_int(const std::string& device) { return holds_wide_types(device) ? dtypes::int64 : dtypes::int32; }
  /// Waits until every kernel and copy queued on `name` (default: the default device) has finished.
  static void synchronize(const std::string& name = "");
  /// The default device: DEV set by a Context, else DEFAULT.
  static std::string default_device() {
    const char* env = std::getenv("DEV");
    if (auto dev = Context::lookup("DEV"); dev && !dev->empty() && !(env && *dev == env)) return canonicalize(*dev);
    return canonicalize(DEFAULT);
  }

 private:
  /// One device's canonical name ("cl:1" -> "CL:1"); the default device for "".
  static std::string canonicalize_one(const std::string& name) {
    std::string s = name;
    s.erase(std::remove_if(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); }), s.end());
    if (s.empty()) s = default_device();
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
    std::string kind = s, index;
    if (const size_t colon = s.find(':'); colon != std::string::npos) kind = s.substr(0, colon), index = s.substr(colon + 1);
    if (std::find(known().begin(), known().end(), kind) == known().end())
      throw DeviceError(detail::cat("unknown device '", name, "'; tinyt knows CPU, CL, CUDA, EMU and WEBGPU (with an index: CL:1)"));
    if (s.find(':') != std::string::npos &&
        (index.empty() || index.size() > 4 || !std::all_of(index.begin(), index.end(), [](unsigned char c) { return std::isdigit(c); })))
      throw DeviceError(detail::cat("device '", name, "': the index after ':' must be a number"));
    const int n = index.empty() ? 0 : std::stoi(index);
    return n == 0 ? kind : detail::cat(kind, ":", n);
  }
  static std::vector<std::string> split_list(const std::string& list) {
    std::vector<std::string> out;
    for (size_t from = 0;;) {
      const size_t comma = list.find(',', from);
      out.push_back(list.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
      if (comma == std::string::npos) return out;
      from = comma + 1;
    }
  }
};

}  // namespace tinyt::inline v0
