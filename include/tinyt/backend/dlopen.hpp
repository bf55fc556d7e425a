// Shared libraries opened at run time (dlopen): how tinyt reaches libLLVM (the ORC JIT of
// cpu_llvm.hpp), the kernels the system C compiler builds (cpu_cc.hpp), the OpenCL ICD loader
// (opencl.hpp), and NVRTC and the CUDA driver (cuda.hpp), with nothing to link. A library that is
// missing is a DeviceError that says what was tried, never a link failure or a crash.
#pragma once

#include <dlfcn.h>

#include <bit>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../error.hpp"

namespace tinyt::inline v0 {
namespace backend {

namespace detail {
using ::tinyt::detail::cat;

/// The loader's message for the last failed dl* call on this thread.
inline std::string last_dlerror() {
  const char* message = dlerror();
  return message ? message : "unknown error";
}
}  // namespace detail

/// An open shared library, closed (dlclose) with its owner. Movable, not copyable.
class Library {
 public:
  /// Opens `path` (a file path, or a name the dynamic loader searches for); DeviceError on failure.
  explicit Library(const std::string& path, int flags = RTLD_NOW | RTLD_LOCAL) : path_(path) {
    handle_ = dlopen(path.c_str(), flags);
    if (!handle_)
      throw DeviceError(
          detail::cat("tinyt: cannot open library '", path, "': ", detail::last_dlerror()));
  }

  /// Opens the first of `candidates` that loads; DeviceError listing every path tried and why.
  static Library open_first(const std::vector<std::string>& candidates,
                            int flags = RTLD_NOW | RTLD_LOCAL) {
    std::string tried;
    for (const std::string& path : candidates) {
      if (void* handle = dlopen(path.c_str(), flags)) return Library(handle, path);
      tried += detail::cat("\n  ", path, ": ", detail::last_dlerror());
    }
    throw DeviceError(detail::cat(
        "tinyt: cannot open a shared library; tried ", candidates.size(),
        candidates.size() == 1 ? " path:" : " paths:", tried.empty() ? " (none given)" : tried));
  }

  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  Library(Library&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}
  Library& operator=(Library&& other) noexcept {
    if (this != &other) {
      close();
      handle_ = std::exchange(other.handle_, nullptr);
      path_ = std::move(other.path_);
    }
    return *this;
  }
  ~Library() { close(); }

  /// The symbol `name` as a `Fn*` (a function type, e.g. `symbol<int(void*)>("f")`, or an object
  /// type); DeviceError naming the library and the symbol when it is missing.
  template <class Fn> Fn* symbol(const char* name) const {
    if (Fn* found = try_symbol<Fn>(name)) return found;
    throw DeviceError(detail::cat("tinyt: library '", path_, "' has no symbol '", name,
                                  "': ", detail::last_dlerror()));
  }

  /// The symbol `name` as a `Fn*`, or nullptr when the library does not have it (optional APIs).
  template <class Fn> Fn* try_symbol(const char* name) const {
    static_assert(!std::is_pointer_v<Fn>,
                  "tinyt::backend::Library::symbol: Fn is the function type, not a pointer: "
                  "write symbol<int(void*)>(name), which returns int (*)(void*)");
    if (!handle_)
      throw DeviceError(detail::cat("tinyt: symbol '", name, "' looked up in a closed Library"));
    dlerror();  // clear a stale error so the one reported is this lookup's
    void* address = dlsym(handle_, name);
    if constexpr (std::is_function_v<Fn>)
      return std::bit_cast<Fn*>(address);
    else
      return static_cast<Fn*>(address);
  }

  /// The path or name the library was opened with.
  const std::string& path() const noexcept { return path_; }
  /// The dlopen handle (nullptr once moved from).
  void* handle() const noexcept { return handle_; }

 private:
  Library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void close() noexcept {
    if (handle_) dlclose(std::exchange(handle_, nullptr));
  }

  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace backend
}  // namespace tinyt::inline v0
