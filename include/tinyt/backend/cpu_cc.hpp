// CPU backend through the system C compiler: C source → shared object in an on-disk cache → dlopen.
//
// Kernel convention: one C function per kernel,
//   void NAME(void** bufs, const long long* vars, int core_id, int core_count);
// bufs are the kernel's buffers in order, vars the values of its symbolic variables in order, and
// core_id/core_count split the outer loop across threads (a single thread passes 0 and 1).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../support.hpp"
#include "compiled.hpp"
#include "dlopen.hpp"
#include "subprocess.hpp"

namespace tinyt::inline v0 {
namespace backend {

namespace detail {
using ::tinyt::detail::cat;

using ::tinyt::detail::Hash128;
using ::tinyt::detail::number_lines;
using ::tinyt::detail::read_file;

/// The host CPU's model and feature flags, hashed: -march=native code is only valid on a CPU
/// like the one it was built on, so a cache shared between machines must tell them apart.
inline std::string host_cpu_id() {
  std::ifstream in("/proc/cpuinfo");
  Hash128 hash;
  for (std::string line; std::getline(in, line) && !line.empty();)
    for (const char* field : {"model name", "flags", "Features", "CPU implementer", "CPU part"})
      if (line.starts_with(field)) hash.update(line).update("\n");
  return hash.hex().substr(0, 16);
}

/// Removes the temporary files of a compile unless it was published.
struct TempFiles {
  std::vector<std::string> paths;
  bool published = false;
  ~TempFiles() {
    if (!published)
      for (const std::string& path : paths) ::unlink(path.c_str());
  }
};
}  // namespace detail

/// Compiles C translation units to shared objects, cached on disk by a hash of compiler and source.
class CCompiler {
 public:
  /// What every kernel is compiled with. No -ffast-math: NaN and inf follow IEEE, as elsewhere.
  /// -ffp-contract=off: a multiply feeding an add is never fused on the compiler's own account
  /// (whether it can depends on the CPU); kernels ask for fused multiply-adds with fma().
  /// -fwrapv: signed integers wrap, as in LLVM IR and PyTorch; without it GCC may assume they do
  /// not overflow, and folds (a + b) < a to b < 0.
  /// Not -fvect-cost-model=dynamic: with it GCC 12 vectorizes a gated load (a pad) into loads
  /// of memory the gate excludes (tests/test_backend_llvm.cpp's guard-page test faults).
  static constexpr std::string_view flags =
      "-O2 -march=native -fPIC -shared -fno-math-errno "
      "-ffp-contract=off -fwrapv -x c";
  /// Linked after the source, so kernels that call libm resolve it themselves.
  static constexpr std::string_view libs = "-lm";

  /// The compiler from $CC (default `cc`) and the cache dir from the environment, read now.
  CCompiler() : CCompiler(env("CC").value_or("cc"), default_cache_dir()) {}
  /// `command`: a program and optional arguments, split on spaces (like `ccache gcc`).
  CCompiler(std::string_view command, std::filesystem::path cache_dir)
      : command_(detail::split_words(command)), dir_(std::move(cache_dir)) {
    if (command_.empty()) command_ = {"cc"};
  }
  CCompiler(const CCompiler&) = delete;
  CCompiler& operator=(const CCompiler&) = delete;

  /// tinyt's cache folder (backend::cache_dir(): $TINYT_CACHE_DIR, else $XDG_CACHE_HOME/tinyt, ...).
  static std::filesystem::path default_cache_dir() { return backend::cache_dir(); }

  const std::filesystem::path& cache_dir() const noexcept { return dir_; }
  /// Whether the compiler program can be found.
  bool available() const { return !detail::find_program(command_.front()).empty(); }

  /// Compiler path and arguments, the first line of its --version, the flags and the host CPU;
  /// part of every key, so a different compiler never reuses another's objects. Computed once.
  std::string identity() const { return resolve().identity; }

  /// The cache key of `src`: 32 hex digits.
  std::string key(std::string_view src) const {
    return detail::Hash128().update(identity()).update(std::string_view("", 1)).update(src).hex();
  }

  /// The path of `src` compiled to a shared object, from the cache when it is there.
  std::string compile(const std::string& src) const {
    const Resolved& compiler = resolve();
    const std::string key = this->key(src);
    ensure_dir();
    const std::string so = (dir_ / (key + ".so")).string(), stored = (dir_ / (key + ".c")).string();
    if (detail::is_file(so) && detail::read_file(stored) == src) {
      ++hits_;
      return so;
    }
    // Build under a unique name beside the entry and publish with rename(2) only on success: a
    // failed or killed compile leaves no entry, and concurrent compiles each publish a whole file.
    std::string tmp = (dir_ / (key + ".tmp.XXXXXX")).string();
    int fd = ::mkstemp(tmp.data());
    if (fd < 0) throw cache_error("cannot create a file in", errno);
    detail::TempFiles temps{{tmp, tmp + ".so"}};
    FILE* file = ::fdopen(fd, "w");
    bool written = file && ::fchmod(fd, 0644) == 0 &&
                   std::fwrite(src.data(), 1, src.size(), file) == src.size();
    int write_errno = errno;
    if ((file ? std::fclose(file) : ::close(fd)) != 0 || !written)
      throw cache_error("cannot write a source file in", write_errno);
    std::vector<std::string> argv = compiler.argv, flag_words = detail::split_words(flags);
    argv.insert(argv.end(), flag_words.begin(), flag_words.end());
    argv.insert(argv.end(), {tmp, "-o", tmp + ".so", std::string(libs)});
    detail::ProcessResult run = detail::run_process(argv);
    if (run.spawn_error) throw missing_compiler(std::strerror(run.spawn_error));
    if (!run.ok() || !detail::is_file(tmp + ".so"))
      throw CompileError(detail::cat("tinyt: the C compiler failed (", run.describe(),
                                     "): ", detail::join(argv), "\n", run.output, "source:\n",
                                     detail::number_lines(src)));
    if (std::rename((tmp + ".so").c_str(), so.c_str()) != 0 ||
        std::rename(tmp.c_str(), stored.c_str()) != 0)
      throw cache_error("cannot rename a compiled kernel into", errno);
    temps.published = true;
    ++compiles_;
    return so;
  }

  /// How many compiles ran the compiler, and how many were answered from the cache (for tests).
  uint64_t compiles() const noexcept { return compiles_; }
  uint64_t cache_hits() const noexcept { return hits_; }

 private:
  struct Resolved {
    std::vector<std::string> argv;  // the program's full path, then the arguments from CC
    std::string identity;
  };

  static std::optional<std::string> env(const char* name) {
    const char* value = std::getenv(name);
    return value && *value ? std::optional<std::string>(value) : std::nullopt;
  }

  /// Finds the compiler and asks its version, once; DeviceError when it cannot be run.
  const Resolved& resolve() const {
    std::lock_guard lock(mutex_);
    if (resolved_.identity.empty()) {
      std::vector<std::string> argv = command_;
      argv.front() = detail::find_program(command_.front());
      if (argv.front().empty()) throw missing_compiler("not found");
      argv.push_back("--version");
      detail::ProcessResult version = detail::run_process(argv);
      if (version.spawn_error) throw missing_compiler(std::strerror(version.spawn_error));
      argv.pop_back();
      std::string first_line = version.output.substr(0, version.output.find('\n'));
      resolved_.identity = detail::cat(detail::join(argv), " | ", first_line, " | ", flags, " ",
                                       libs, " | cpu ", detail::host_cpu_id());
      resolved_.argv = std::move(argv);
    }
    return resolved_;  // never changes once set, so the reference outlives the lock safely
  }

  void ensure_dir() const {
    if (const std::string problem = prepare_cache_dir(dir_); !problem.empty())
      throw DeviceError("tinyt: C compiler: " + problem);
  }

  DeviceError cache_error(const char* what, int error) const {
    return DeviceError(detail::cat("tinyt: ", what, " the kernel cache directory '", dir_.string(),
                                   "': ", std::strerror(error),
                                   " (set TINYT_CACHE_DIR to a writable directory)"));
  }
  DeviceError missing_compiler(const char* why) const {
    return DeviceError(detail::cat("tinyt: CPU_CC backend: C compiler '", command_.front(),
                                   "' cannot be run (", why,
                                   "); set CC to a C compiler, or use the CPU_LLVM backend"));
  }

  std::vector<std::string> command_;
  std::filesystem::path dir_;
  mutable std::mutex mutex_;
  mutable Resolved resolved_;
  mutable std::atomic<uint64_t> compiles_{0}, hits_{0};
};

/// The process-wide compiler the engine uses; reads the environment at first use.
inline CCompiler& default_cc() {
  static CCompiler compiler;
  return compiler;
}

/// A compiled kernel, loaded: a shared object and its function, callable as the convention says.
class CProgram {
 public:
  using Function = void(void** bufs, const long long* vars, int core_id, int core_count);
  static_assert(sizeof(long long) == sizeof(int64_t),
                "tinyt: the C convention needs 64-bit long long");

  /// Opens `so_path` (the same path may be open in several CPrograms) and finds `function_name`.
  CProgram(const std::string& so_path, const std::string& function_name)
      : library_(so_path),
        function_(library_.symbol<Function>(function_name.c_str())),
        name_(function_name) {}

  /// Runs the kernel on `bufs` with the values `vars` (may be null when it has none).
  void operator()(void* const* bufs, const int64_t* vars, int core_id = 0,
                  int core_count = 1) const {
    function_(const_cast<void**>(bufs), reinterpret_cast<const long long*>(vars), core_id,
              core_count);
  }

  const std::string& name() const noexcept { return name_; }
  const std::string& path() const noexcept { return library_.path(); }
  /// The kernel's function, valid while this CProgram lives.
  Function* function() const noexcept { return function_; }

 private:
  Library library_;
  Function* function_;
  std::string name_;
};

}  // namespace backend
}  // namespace tinyt::inline v0
