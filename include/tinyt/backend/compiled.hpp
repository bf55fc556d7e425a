// What a device is made of, as in tinygrad's `Compiled`: an allocator (memory and copies), a
// compiler (source -> binary, cached on disk by a key naming the device, the compiler and its
// version), a program loader (binary -> a launchable kernel) and the source language its
// renderer writes. Backends (cpu.hpp, opencl.hpp, cuda.hpp) implement these parts and register a
// factory by device kind; the engine reaches every device through this header alone. Nothing
// here knows about tensors.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../helpers.hpp"
#include "../support.hpp"

namespace tinyt::inline v0 {
namespace backend {

/// The source a device's compiler takes (`listing`: the linearized program itself, as text, for
/// the emulated GPU: renderer/listing.hpp).
enum class Language { c, llvm_ir, opencl, cuda, listing, wgsl };

/// A launch's work: global[d] work-items in all along dimension d, in groups of local[d].
/// (Both are counts of work-items, as OpenCL's global/local work sizes; CUDA's grid is global/local.)
struct LaunchDims {
  std::array<int64_t, 3> global{1, 1, 1}, local{1, 1, 1};
};

/// Device memory: opaque handles (a pointer on the CPU, a cl_mem, a CUdeviceptr), allocated,
/// freed and copied to and from the host. Copies are complete when they return.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// `nbytes` of device memory; OutOfMemoryError naming the device and size when there is none.
  virtual void* alloc(size_t nbytes) = 0;
  virtual void free(void* handle, size_t nbytes) = 0;
  /// Host memory `src` into device memory `dst`.
  virtual void copyin(void* dst, const void* src, size_t nbytes) = 0;
  /// Device memory `src` into host memory `dst`, after every launch before it finished.
  virtual void copyout(void* dst, void* src, size_t nbytes) = 0;
  /// Copies device memory of this device to `dst` of this device.
  virtual void copy(void* dst, void* src, size_t nbytes) = 0;
  /// A host pointer to the memory when the device can give one (the CPU), else null.
  virtual void* host_pointer(void* /*handle*/) { return nullptr; }
  /// The handle of host memory `p` that the caller keeps alive, when this device's kernels can
  /// use host memory in place (the CPU), else null.
  virtual void* borrow_host(void* /*p*/) { return nullptr; }
  /// Bytes of the Buffers allocated here and not yet freed (Buffer counts them).
  std::atomic<int64_t> in_use{0};
};

/// An allocator that keeps freed blocks by size for the next allocation of that size (tinygrad's
/// LRUAllocator): a training step frees and allocates the same sizes every time, and the device's
/// own allocation (cuMemAlloc, clCreateBuffer, the C library's) costs far more than a lookup.
/// Subclasses give the device's own allocation and release; up to `cache_limit` bytes of freed
/// blocks are kept, and all of them are released (then the allocation tried once more) when the
/// device is out of memory. A subclass's destructor calls release_cache().
class LruAllocator : public Allocator {
 public:
  static constexpr size_t cache_limit = size_t{1} << 30;
  void* alloc(size_t nbytes) final {
    const size_t n = block_size(nbytes);
    {
      std::lock_guard lock(mu_);
      if (auto it = free_.find(n); it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= n;
        return p;
      }
    }
    try {
      return allocate(n);
    } catch (const OutOfMemoryError&) {
      release_cache();
      return allocate(n);
    }
  }
  void free(void* handle, size_t nbytes) final {
    const size_t n = block_size(nbytes);
    {
      std::lock_guard lock(mu_);
      if (cached_bytes_ + n <= cache_limit) {
        free_[n].push_back(handle);
        cached_bytes_ += n;
        return;
      }
    }
    release(handle, n);
  }
  /// Releases every kept block to the device.
  void release_cache() {
    std::map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard lock(mu_);
      blocks.swap(free_);
      cached_bytes_ = 0;
    }
    for (auto& [n, handles] : blocks)
      for (void* h : handles) release(h, n);
  }
  /// Bytes of freed blocks kept for reuse.
  size_t cached_bytes() {
    std::lock_guard lock(mu_);
    return cached_bytes_;
  }

 protected:
  /// The device's own allocation of `nbytes` (a block size); OutOfMemoryError when it has none.
  virtual void* allocate(size_t nbytes) = 0;
  /// The device's own release of a block allocate() gave.
  virtual void release(void* handle, size_t nbytes) = 0;
  /// The size of the block that holds `nbytes` (blocks of one size are interchangeable).
  virtual size_t block_size(size_t nbytes) const { return std::max<size_t>(nbytes, 1); }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

/// A kernel loaded on a device, ready to launch.
class Program {
 public:
  virtual ~Program() = default;
  /// Runs on `bufs` (device handles, by DEFINE_GLOBAL index) with the symbolic variables' values
  /// `vars`; when `timed`, waits for it and returns its time in seconds (else may return 0 at once).
  virtual double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, const LaunchDims& dims,
                        bool timed) = 0;
};

/// Turns source into a binary the device loads.
class Compiler {
 public:
  virtual ~Compiler() = default;
  /// The device, the compiler and its version and options: part of every cache key.
  virtual std::string identity() const = 0;
  /// The binary of `source`; CompileError quoting the numbered source and the log on failure.
  virtual std::string compile(const std::string& source, const std::string& name) = 0;
  /// Whether binaries may be kept on disk (a binary that is a path or an address may not).
  virtual bool disk_cacheable() const { return true; }
};

/// What the code generator must know about a device.
struct Target {
  Language language = Language::c;
  bool gpu = false;             // output ranges become work-items (global/local ids), not loops
  int64_t threads = 1;          // CPU threads a kernel may be split across
  int64_t max_local = 1;        // work-items in a work-group at most
  int64_t warp = 0;             // work-items that exchange registers (warp shuffles); 0: none
  bool tensor_cores = false;    // runs mma.sync m16n8k16 (tensor_cores.hpp): CUDA's sm_80 and later
  int64_t compute_units = 1;    // work-groups that run at once (OpenCL compute units, CUDA SMs)
  int64_t vector_bytes = 16;    // a register's width, for upcasts
  int64_t vector_count = 16;    // registers
  int64_t stream_bytes = 0;     // a buffer this big or bigger is written past the caches (0: never)
  bool wide_types = true;       // holds float64, int64 and uint64 (WebGPU: no 64-bit types)
  int64_t max_buffers = 0;      // buffers a kernel may bind, its output included (0: no limit)
  bool half = false;            // computes in half precision (cl_khr_fp16 / CUDA): unused so far
};

/// One device: its parts.
class Device {
 public:
  virtual ~Device() = default;
  /// "CPU", "CL:1", "CUDA".
  virtual const std::string& name() const = 0;
  virtual Allocator& allocator() = 0;
  virtual Compiler& compiler() = 0;
  virtual Target target() const = 0;
  /// Loads a binary from this device's compiler; `name` is the kernel's function.
  virtual std::unique_ptr<Program> load(const std::string& binary, const std::string& name) = 0;
  /// Waits until every launch and copy issued so far finished.
  virtual void synchronize() {}
};

/// Makes the device of a kind ("CL") with an index (the 1 of "CL:1"); DeviceError when it cannot
/// be opened (naming the libraries tried) or has no such index.
using DeviceFactory = std::function<std::unique_ptr<Device>(int index)>;

namespace detail {
inline std::map<std::string, DeviceFactory>& factories() {
  static auto* map = new std::map<std::string, DeviceFactory>;  // never destroyed: buffers free at exit
  return *map;
}
inline std::mutex& devices_mutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
}  // namespace detail

/// Registers the factory of a device kind; returns true (for static initializers).
inline bool register_device(const std::string& kind, DeviceFactory factory) {
  std::lock_guard lock(detail::devices_mutex());
  detail::factories()[kind] = std::move(factory);
  return true;
}

/// The kinds registered in this program, sorted.
inline std::vector<std::string> registered_kinds() {
  std::lock_guard lock(detail::devices_mutex());
  std::vector<std::string> out;
  for (const auto& [kind, factory] : detail::factories()) out.push_back(kind);
  return out;
}

/// The open device `kind` with `index`, opened at first use and kept for the process.
inline Device& open_device(const std::string& kind, int index) {
  static auto* open = new std::map<std::pair<std::string, int>, std::unique_ptr<Device>>;
  static auto* failed = new std::map<std::pair<std::string, int>, std::string>;
  std::lock_guard lock(detail::devices_mutex());
  const auto key = std::pair(kind, index);
  if (auto it = open->find(key); it != open->end()) return *it->second;
  if (auto it = failed->find(key); it != failed->end()) throw DeviceError(it->second);
  auto f = detail::factories().find(kind);
  if (f == detail::factories().end())
    throw DeviceError(::tinyt::detail::cat("device ", kind, ": no backend for it in this build"));
  try {
    return *open->emplace(key, f->second(index)).first->second;
  } catch (const Error& e) {
    failed->emplace(key, e.what());  // trying again would open the libraries again, and fail again
    throw;
  }
}

/// tinyt's cache folder (binaries, the C compiler's objects, BEAM's choices), read now:
/// $TINYT_CACHE_DIR, else $XDG_CACHE_HOME/tinyt, else $HOME/.cache/tinyt, else /tmp/tinyt-<uid>.
inline std::filesystem::path cache_dir() {
  const auto set = [](const char* name) -> const char* {
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
  };
  if (const char* dir = set("TINYT_CACHE_DIR")) return dir;
  if (const char* dir = set("XDG_CACHE_HOME")) return std::filesystem::path(dir) / "tinyt";
  if (const char* dir = set("HOME")) return std::filesystem::path(dir) / ".cache" / "tinyt";
  return ::tinyt::detail::cat("/tmp/tinyt-", static_cast<unsigned long>(::getuid()));
}

/// Makes `dir` (tinyt's cache folder or one below it) exist; empty when it does, else why not.
/// Under the /tmp fallback the folder must be this user's and private: anyone can create a folder
/// in /tmp, and binaries found there are loaded and run.
inline std::string prepare_cache_dir(const std::filesystem::path& dir) {
  const std::string fallback = ::tinyt::detail::cat("/tmp/tinyt-", static_cast<unsigned long>(::getuid()));
  const std::string path = dir.lexically_normal().string();
  if (path.starts_with(fallback) && (path.size() == fallback.size() || path[fallback.size()] == '/')) {
    ::mkdir(fallback.c_str(), 0700);
    struct stat st;
    if (::lstat(fallback.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0)
      return ::tinyt::detail::cat("the cache '", fallback,
                                  "' is not a private directory owned by this user; set TINYT_CACHE_DIR to a directory of your own");
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return ::tinyt::detail::cat("cannot create the cache directory '", dir.string(), "': ", error.message(),
                                         " (set TINYT_CACHE_DIR to a writable directory)");
  return "";
}

/// `compiler.compile(source)`, from the disk cache when this compiler built this source before
/// (keyed by the compiler's identity and the source; the source is stored beside the binary and
/// compared, so a hash collision recompiles). A cache that cannot be written costs a compile.
inline std::string cached_compile(Compiler& compiler, const std::string& source, const std::string& name) {
  if (!compiler.disk_cacheable() || getenv_int("DISABLE_COMPILER_CACHE", 0)) return compiler.compile(source, name);
  const std::string key = ::tinyt::detail::Hash128().update(compiler.identity()).update(std::string_view("", 1)).update(source).hex();
  const std::filesystem::path dir = cache_dir() / "binaries", bin = dir / (key + ".bin"), src = dir / (key + ".src");
  if (!prepare_cache_dir(dir).empty()) return compiler.compile(source, name);  // a cache that cannot be used costs a compile
  if (auto stored = ::tinyt::detail::read_file(src); stored && *stored == source)
    if (auto binary = ::tinyt::detail::read_file(bin)) return *binary;
  std::string binary = compiler.compile(source, name);
  // the binary first: a source without its binary is a miss
  if (::tinyt::detail::write_file_atomically(bin, binary)) ::tinyt::detail::write_file_atomically(src, source);
  return binary;
}

}  // namespace backend
}  // namespace tinyt::inline v0
