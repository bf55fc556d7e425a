// CUDA backend: kernels in CUDA C++ are compiled by NVRTC to PTX, which the driver (libcuda)
// loads and finishes for the GPU it runs on. Both libraries are opened with dlopen at first use
// and reached only through the two tables below: building tinyt needs no CUDA header or library,
// and a machine without a GPU still compiles kernels (CudaCompiler("sm_90"), as tests do).
//
// The driver keeps a current context per thread, and kernels may launch from several threads
// (the engine's, BEAM's), so every part makes the device's primary context current on the calling
// thread before it calls the driver. Everything runs on the legacy default stream: launches and
// copies happen in the order they were issued, whichever thread issued them.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../support.hpp"
#include "compiled.hpp"
#include "dlopen.hpp"

namespace tinyt::inline v0 {
namespace backend {

/// The NVRTC and driver API types and constants this backend uses (values of nvrtc.h and cuda.h),
/// declared here: no CUDA header is needed.
namespace cuda_c {
using nvrtcResult = int;
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // 64 bits on every platform (cuda.h's CUdeviceptr_v2)
#define TINYT_CUDA_OPAQUE(handle) \
  struct handle##_st;             \
  using handle = handle##_st*;
TINYT_CUDA_OPAQUE(nvrtcProgram)
TINYT_CUDA_OPAQUE(CUcontext)
TINYT_CUDA_OPAQUE(CUmodule)
TINYT_CUDA_OPAQUE(CUfunction)
TINYT_CUDA_OPAQUE(CUstream)  // null: the legacy default stream
TINYT_CUDA_OPAQUE(CUevent)
#undef TINYT_CUDA_OPAQUE
inline constexpr nvrtcResult NVRTC_SUCCESS = 0;
inline constexpr CUresult CUDA_SUCCESS = 0, CUDA_ERROR_OUT_OF_MEMORY = 2,
                          CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222, CUDA_ERROR_NOT_READY = 600;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
                     CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
                     CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
                     CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr unsigned CU_EVENT_DEFAULT = 0;
}  // namespace cuda_c

// clang-format off
/// Every NVRTC function used: X(required, name, signature). All exist since NVRTC 7.
#define TINYT_NVRTC_API(X)                                                                          \
  X(1, nvrtcVersion, nvrtcResult(int*, int*))                                                       \
  X(1, nvrtcCreateProgram, nvrtcResult(nvrtcProgram*, const char*, const char*, int,                \
                                       const char* const*, const char* const*))                     \
  X(1, nvrtcCompileProgram, nvrtcResult(nvrtcProgram, int, const char* const*))                     \
  X(1, nvrtcGetProgramLogSize, nvrtcResult(nvrtcProgram, size_t*))                                  \
  X(1, nvrtcGetProgramLog, nvrtcResult(nvrtcProgram, char*))                                        \
  X(1, nvrtcGetPTXSize, nvrtcResult(nvrtcProgram, size_t*))                                         \
  X(1, nvrtcGetPTX, nvrtcResult(nvrtcProgram, char*))                                               \
  X(1, nvrtcDestroyProgram, nvrtcResult(nvrtcProgram*))                                             \
  X(1, nvrtcGetErrorString, const char*(nvrtcResult))

/// Every driver function used, by the symbol the driver exports: the _v2 names are the 64-bit
/// CUdeviceptr versions cuda.h's macros pick (the unsuffixed ones take 32-bit pointers).
#define TINYT_CUDA_DRIVER_API(X)                                                                    \
  X(1, cuInit, CUresult(unsigned))                                                                  \
  X(1, cuDriverGetVersion, CUresult(int*))                                                          \
  X(1, cuGetErrorString, CUresult(CUresult, const char**))                                          \
  X(1, cuDeviceGetCount, CUresult(int*))                                                            \
  X(1, cuDeviceGet, CUresult(CUdevice*, int))                                                       \
  X(1, cuDeviceGetName, CUresult(char*, int, CUdevice))                                             \
  X(1, cuDeviceGetAttribute, CUresult(int*, int, CUdevice))                                         \
  X(1, cuDevicePrimaryCtxRetain, CUresult(CUcontext*, CUdevice))                                    \
  X(1, cuCtxSetCurrent, CUresult(CUcontext))                                                        \
  X(1, cuCtxSynchronize, CUresult())                                                                \
  X(1, cuMemAlloc_v2, CUresult(CUdeviceptr*, size_t))                                               \
  X(1, cuMemFree_v2, CUresult(CUdeviceptr))                                                         \
  X(1, cuMemcpyHtoD_v2, CUresult(CUdeviceptr, const void*, size_t))                                 \
  X(1, cuMemcpyDtoH_v2, CUresult(void*, CUdeviceptr, size_t))                                       \
  X(1, cuMemcpyDtoD_v2, CUresult(CUdeviceptr, CUdeviceptr, size_t))                                 \
  X(1, cuModuleLoadData, CUresult(CUmodule*, const void*))                                          \
  X(1, cuModuleGetFunction, CUresult(CUfunction*, CUmodule, const char*))                           \
  X(1, cuModuleUnload, CUresult(CUmodule))                                                          \
  X(1, cuLaunchKernel, CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,       \
                                unsigned, unsigned, CUstream, void**, void**))                      \
  X(1, cuEventCreate, CUresult(CUevent*, unsigned))                                                 \
  X(1, cuEventRecord, CUresult(CUevent, CUstream))                                                  \
  X(1, cuEventSynchronize, CUresult(CUevent))                                                       \
  X(1, cuEventDestroy_v2, CUresult(CUevent))                                                        \
  X(1, cuEventElapsedTime, CUresult(float*, CUevent, CUevent))                                      \
  X(1, cuStreamQuery, CUresult(CUstream))                                                           \
  /* CUDA 12.8 and later; the one cuda.h names since */                                             \
  X(0, cuEventElapsedTime_v2, CUresult(float*, CUevent, CUevent))
// clang-format on

namespace cuda_c {
#define TINYT_CUDA_FIELD(required, name, ...) std::add_pointer_t<__VA_ARGS__> name = nullptr;
#define TINYT_CUDA_BIND(required, name, ...) \
  name = required ? lib.symbol<__VA_ARGS__>(#name) : lib.try_symbol<__VA_ARGS__>(#name);

/// NVRTC, opened, with the table's functions.
struct Nvrtc {
  Library lib;
  TINYT_NVRTC_API(TINYT_CUDA_FIELD)
  explicit Nvrtc(Library opened) : lib(std::move(opened)) { TINYT_NVRTC_API(TINYT_CUDA_BIND) }
};

/// The CUDA driver, opened, with the table's functions.
struct Driver {
  Library lib;
  TINYT_CUDA_DRIVER_API(TINYT_CUDA_FIELD)
  explicit Driver(Library opened) : lib(std::move(opened)) {
    TINYT_CUDA_DRIVER_API(TINYT_CUDA_BIND);
  }
  /// "out of memory (CUresult 2)".
  std::string error(CUresult result) const {
    const char* text = nullptr;
    if (cuGetErrorString(result, &text) != CUDA_SUCCESS || !text) text = "unknown error";
    return detail::cat(text, " (CUresult ", result, ")");
  }
};
#undef TINYT_CUDA_FIELD
#undef TINYT_CUDA_BIND

/// The first of `candidates` that opens; DeviceError saying which library CUDA needs, and each path
/// tried.
inline Library open_library(const char* what, const std::vector<std::string>& candidates) {
  try {
    return Library::open_first(candidates);
  } catch (const DeviceError& e) {
    std::string_view why = e.what();
    if (why.starts_with("tinyt: ")) why.remove_prefix(7);
    throw DeviceError(detail::cat("tinyt: CUDA needs ", what, ": ", why));
  }
}

/// The process-wide NVRTC, opened at first use (reading CUDA_PATH then) and never closed.
inline const Nvrtc& nvrtc() {
  static const Nvrtc* loaded = [] {
    std::vector<std::string> candidates;
    if (const char* root = std::getenv("CUDA_PATH"); root && *root)
      candidates = {std::string(root) + "/lib64/libnvrtc.so",
                    std::string(root) + "/lib/libnvrtc.so"};
    candidates.insert(candidates.end(), {"/usr/local/cuda/lib64/libnvrtc.so", "libnvrtc.so.13",
                                         "libnvrtc.so.12", "libnvrtc.so"});
    return new Nvrtc(open_library("NVRTC (libnvrtc)", candidates));
  }();
  return *loaded;
}

/// The process-wide driver, opened and initialized at first use and never closed (buffers and
/// modules may be freed while the process exits).
inline const Driver& driver() {
  static const Driver* loaded = [] {
    auto* api =
        new Driver(open_library("the NVIDIA driver (libcuda)", {"libcuda.so.1", "libcuda.so"}));
    if (const CUresult r = api->cuInit(0); r != CUDA_SUCCESS) {
      const std::string message = detail::cat("tinyt: CUDA: the driver (", api->lib.path(),
                                              ") cannot start: cuInit: ", api->error(r));
      delete api;
      throw DeviceError(message);
    }
    return api;
  }();
  return *loaded;
}

/// The folder of CUDA headers that belongs to the NVRTC loaded (the toolkit's include/, beside its
/// lib/), else $CUDA_PATH/include, else /usr/local/cuda/include: the first with cuda_fp16.h, or "".
inline std::string toolkit_include_dir(const Nvrtc& api) {
  std::vector<std::filesystem::path> candidates;
  if (Dl_info info{}; dladdr(std::bit_cast<void*>(api.nvrtcVersion), &info) && info.dli_fname)
    candidates.push_back(std::filesystem::path(info.dli_fname).parent_path().parent_path() /
                         "include");
  if (const char* root = std::getenv("CUDA_PATH"); root && *root)
    candidates.push_back(std::filesystem::path(root) / "include");
  candidates.push_back("/usr/local/cuda/include");
  std::error_code error;
  for (const auto& dir : candidates)
    if (std::filesystem::exists(dir / "cuda_fp16.h", error)) return dir.string();
  return "";
}

/// The options of every compile but the architecture. --fmad=false: a multiply feeding an add is
/// not fused on the compiler's own account (kernels write fma() where they mean one), so results
/// round as the other backends' do. The toolkit's headers let a kernel include <cuda_fp16.h>.
inline const std::vector<std::string>& nvrtc_options() {
  static const std::vector<std::string> options = [] {
    std::vector<std::string> out{"--fmad=false", "-default-device", "--std=c++17"};
    if (std::string dir = toolkit_include_dir(nvrtc()); !dir.empty()) out.push_back("-I" + dir);
    return out;
  }();
  return options;
}

/// A device's primary context, with what its allocator and programs need to call the driver.
struct Context {
  const Driver* api;
  CUcontext context;
  std::string device;  // "CUDA:1", for messages

  /// DeviceError naming the device, the call and the driver's message unless `result` is success.
  void check(CUresult result, std::string_view call) const {
    if (result != CUDA_SUCCESS)
      throw DeviceError(detail::cat("tinyt: ", device, ": ", call, ": ", api->error(result)));
  }
  /// Makes the context current on this thread (the driver's current context is per thread).
  void enter() const { check(api->cuCtxSetCurrent(context), "cuCtxSetCurrent"); }
  /// Calls `fn(args...)` (the driver function `name`) in the context, and checks its result.
  template <class Fn, class... Args> void call(std::string_view name, Fn* fn, Args... args) const {
    enter();
    check(fn(args...), name);
  }
};

/// The CUdeviceptr a buffer handle holds.
inline CUdeviceptr deviceptr(const void* handle) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(handle));
}
}  // namespace cuda_c

/// "13.0": the version of the NVRTC loaded.
inline std::string nvrtc_version() {
  const cuda_c::Nvrtc& api = cuda_c::nvrtc();
  int major = 0, minor = 0;
  api.nvrtcVersion(&major, &minor);
  return detail::cat(major, ".", minor);
}

/// The PTX of kernel `name` in CUDA C++ `source`, for `arch` ("sm_90": PTX for compute_90, which
/// the driver compiles for any GPU at least that new). CompileError with NVRTC's log and the
/// numbered source when it does not compile.
inline std::string nvrtc_compile(const std::string& source, const std::string& arch,
                                 const std::string& name) {
  const cuda_c::Nvrtc& api = cuda_c::nvrtc();
  const auto check = [&](cuda_c::nvrtcResult r, const char* call) {
    if (r != cuda_c::NVRTC_SUCCESS)
      throw CompileError(detail::cat("tinyt: NVRTC: ", call, " for kernel '", name,
                                     "': ", api.nvrtcGetErrorString(r)));
  };
  cuda_c::nvrtcProgram program = nullptr;
  const std::string file = name + ".cu";  // how the log names the source
  check(api.nvrtcCreateProgram(&program, source.c_str(), file.c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  const auto destroy = [&api](cuda_c::nvrtcProgram p) { api.nvrtcDestroyProgram(&p); };
  const std::unique_ptr<cuda_c::nvrtcProgram_st, decltype(destroy)> owner(program, destroy);

  const std::string gpu =
      "--gpu-architecture=" + (arch.starts_with("sm_") ? "compute_" + arch.substr(3) : arch);
  std::vector<const char*> options{gpu.c_str()};
  for (const std::string& option : cuda_c::nvrtc_options()) options.push_back(option.c_str());
  const auto status =
      api.nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  if (status != cuda_c::NVRTC_SUCCESS) {
    size_t size = 0;
    std::string log;
    if (api.nvrtcGetProgramLogSize(program, &size) == cuda_c::NVRTC_SUCCESS && size > 1) {
      log.resize(size);
      api.nvrtcGetProgramLog(program, log.data());
      log.resize(size - 1);  // the size counts the terminating NUL
    }
    throw CompileError(detail::cat("tinyt: NVRTC cannot compile kernel '", name, "' for ", arch,
                                   ": ", api.nvrtcGetErrorString(status), "\n", log, "source:\n",
                                   ::tinyt::detail::number_lines(source)));
  }
  size_t size = 0;
  check(api.nvrtcGetPTXSize(program, &size), "nvrtcGetPTXSize");
  std::string ptx(size, '\0');
  check(api.nvrtcGetPTX(program, ptx.data()), "nvrtcGetPTX");
  ptx.resize(size ? size - 1 : 0);  // the size counts the terminating NUL; std::string has its own
  return ptx;
}

/// Compiles CUDA C++ to PTX for one architecture; needs NVRTC, not a GPU.
class CudaCompiler : public Compiler {
 public:
  /// For `arch` ("sm_80", "sm_90").
  explicit CudaCompiler(std::string arch) : arch_(std::move(arch)) {}
  std::string identity() const override {
    std::string options;
    for (const std::string& option : cuda_c::nvrtc_options())
      options += (options.empty() ? "" : " ") + option;
    return detail::cat("CUDA | NVRTC ", nvrtc_version(), " | ", arch_, " | ", options);
  }
  std::string compile(const std::string& source, const std::string& name) override {
    return nvrtc_compile(source, arch_, name);
  }
  const std::string& arch() const noexcept { return arch_; }

 private:
  std::string arch_;
};

/// GPU memory: handles are CUdeviceptrs. Copies block until the host side is done with its memory,
/// and are ordered after every launch and copy before them (one stream).
class CudaAllocator : public LruAllocator {
 public:
  explicit CudaAllocator(std::shared_ptr<const cuda_c::Context> context)
      : ctx_(std::move(context)) {}
  ~CudaAllocator() override { release_cache(); }

 protected:
  // (a freed block is reused at once: the one stream runs what reads its old contents first)
  void* allocate(size_t nbytes) override {
    ctx_->enter();
    cuda_c::CUdeviceptr ptr = 0;
    // cuMemAlloc refuses zero bytes; a zero-byte buffer still needs a handle of its own
    const cuda_c::CUresult r = ctx_->api->cuMemAlloc_v2(&ptr, std::max<size_t>(nbytes, 1));
    if (r == cuda_c::CUDA_ERROR_OUT_OF_MEMORY)
      throw OutOfMemoryError(
          detail::cat("tinyt: ", ctx_->device, ": out of memory allocating ", nbytes, " bytes"));
    ctx_->check(r, "cuMemAlloc");
    return reinterpret_cast<void*>(static_cast<uintptr_t>(ptr));
  }
  // Errors are ignored: this runs in destructors, also after the driver shut down at exit, and a
  // failed free (after a faulting kernel) is reported by the next call anyway.
  void release(void* handle, size_t /*nbytes*/) override {
    if (ctx_->api->cuCtxSetCurrent(ctx_->context) == cuda_c::CUDA_SUCCESS)
      ctx_->api->cuMemFree_v2(cuda_c::deviceptr(handle));
  }

 public:
  // (nothing to copy is no call: the driver need not accept zero bytes)
  void copyin(void* dst, const void* src, size_t nbytes) override {
    if (nbytes)
      ctx_->call("cuMemcpyHtoD", ctx_->api->cuMemcpyHtoD_v2, cuda_c::deviceptr(dst), src, nbytes);
  }
  void copyout(void* dst, void* src, size_t nbytes) override {
    if (nbytes)
      ctx_->call("cuMemcpyDtoH", ctx_->api->cuMemcpyDtoH_v2, dst, cuda_c::deviceptr(src), nbytes);
  }
  void copy(void* dst, void* src, size_t nbytes) override {
    if (nbytes)
      ctx_->call("cuMemcpyDtoD", ctx_->api->cuMemcpyDtoD_v2, cuda_c::deviceptr(dst),
                 cuda_c::deviceptr(src), nbytes);
  }

 private:
  std::shared_ptr<const cuda_c::Context> ctx_;
};

/// A kernel loaded from PTX. Its parameters are the buffers (pointers), then the variables (ints).
class CudaProgram : public Program {
 public:
  CudaProgram(std::shared_ptr<const cuda_c::Context> context, const std::string& ptx,
              const std::string& name)
      : ctx_(std::move(context)), name_(name) {
    const cuda_c::Driver& api = *ctx_->api;
    ctx_->enter();
    if (const auto r = api.cuModuleLoadData(&module_, ptx.c_str())) {
      // the usual cause: PTX of an NVRTC newer than the driver, which names its PTX version
      int version = 0;
      api.cuDriverGetVersion(&version);
      ctx_->check(r, detail::cat("cuModuleLoadData (PTX of NVRTC ", nvrtc_version(),
                                 ", driver of CUDA ", version / 1000, ".", version % 1000 / 10,
                                 r == cuda_c::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                                     ? "; set CUDA_PATH to a toolkit no newer than the driver)"
                                     : ")"));
    }
    if (const auto r = api.cuModuleGetFunction(&function_, module_, name.c_str())) {
      api.cuModuleUnload(module_);
      ctx_->check(r, detail::cat("cuModuleGetFunction '", name, "'"));
    }
  }
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;
  ~CudaProgram() override {  // errors ignored, as in CudaAllocator::free
    if (ctx_->api->cuCtxSetCurrent(ctx_->context) == cuda_c::CUDA_SUCCESS)
      ctx_->api->cuModuleUnload(module_);
  }

  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vars,
                const LaunchDims& dims, bool timed) override {
    const cuda_c::Driver& api = *ctx_->api;
    // cuLaunchKernel reads each argument through a pointer to it
    std::vector<cuda_c::CUdeviceptr> pointers(bufs.size());
    std::vector<int32_t> ints(vars.size());
    std::vector<void*> args;
    for (size_t i = 0; i < pointers.size(); ++i)
      args.push_back(&(pointers[i] = cuda_c::deviceptr(bufs[i])));
    for (size_t i = 0; i < vars.size(); ++i) {
      TINYT_ASSERT(vars[i] == static_cast<int32_t>(vars[i]), "variable ", i, " = ", vars[i],
                   " does not fit an int");
      args.push_back(&(ints[i] = static_cast<int32_t>(vars[i])));
    }
    unsigned grid[3], block[3];
    for (int d = 0; d < 3; ++d) {
      TINYT_ASSERT(dims.local[d] > 0 && dims.global[d] % dims.local[d] == 0, "global size ",
                   dims.global[d], " is not a multiple of local size ", dims.local[d]);
      grid[d] = static_cast<unsigned>(dims.global[d] / dims.local[d]);
      block[d] = static_cast<unsigned>(dims.local[d]);
    }
    const auto run = [&] {
      ctx_->call("cuLaunchKernel", api.cuLaunchKernel, function_, grid[0], grid[1], grid[2],
                 block[0], block[1], block[2], 0u, cuda_c::CUstream{}, args.data(), nullptr);
    };
    if (!timed) {
      run();
      return 0;
    }
    const auto destroy = [&api](cuda_c::CUevent e) { api.cuEventDestroy_v2(e); };
    using Event = std::unique_ptr<cuda_c::CUevent_st, decltype(destroy)>;
    const auto event = [&] {
      cuda_c::CUevent e = nullptr;
      ctx_->call("cuEventCreate", api.cuEventCreate, &e, cuda_c::CU_EVENT_DEFAULT);
      return Event(e, destroy);
    };
    const Event start = event(), end = event();
    ctx_->call("cuEventRecord", api.cuEventRecord, start.get(), cuda_c::CUstream{});
    run();
    ctx_->call("cuEventRecord", api.cuEventRecord, end.get(), cuda_c::CUstream{});
    ctx_->call("cuEventSynchronize", api.cuEventSynchronize, end.get());
    float ms = 0;
    const auto elapsed =
        api.cuEventElapsedTime_v2 ? api.cuEventElapsedTime_v2 : api.cuEventElapsedTime;
    ctx_->check(elapsed(&ms, start.get(), end.get()), "cuEventElapsedTime");
    return ms * 1e-3;
  }

 private:
  std::shared_ptr<const cuda_c::Context> ctx_;
  std::string name_;
  cuda_c::CUmodule module_ = nullptr;
  cuda_c::CUfunction function_ = nullptr;
};

/// An NVIDIA GPU through the CUDA driver, in its primary context (shared with any other user of
/// the driver in this process).
class CudaDevice : public Device {
 public:
  /// The GPU with driver ordinal `index`; DeviceError when the driver is missing or cannot start,
  /// or there is no such GPU.
  explicit CudaDevice(int index) : name_(index == 0 ? "CUDA" : detail::cat("CUDA:", index)) {
    const cuda_c::Driver& api = cuda_c::driver();
    const cuda_c::Context probe{&api, nullptr, name_};  // check() before there is a context
    int count = 0;
    probe.check(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0)
      throw DeviceError(
          detail::cat("tinyt: ", name_, ": the NVIDIA driver (", api.lib.path(), ") sees no GPU"));
    if (index < 0 || index >= count)
      throw DeviceError(detail::cat("tinyt: ", name_, ": no such GPU; the driver sees ", count,
                                    " (CUDA to CUDA:", count - 1, ")"));
    cuda_c::CUdevice device = 0;
    probe.check(api.cuDeviceGet(&device, index), "cuDeviceGet");
    char gpu[256] = {};
    probe.check(api.cuDeviceGetName(gpu, sizeof gpu - 1, device), "cuDeviceGetName");
    gpu_ = gpu;
    const auto attribute = [&](int which) {
      int value = 0;
      probe.check(api.cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute");
      return value;
    };
    const int major = attribute(cuda_c::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    major_ = major;
    const int minor = attribute(cuda_c::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    max_threads_ = attribute(cuda_c::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    multiprocessors_ = attribute(cuda_c::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    cuda_c::CUcontext context = nullptr;
    // retained for the process: the primary context lives as long as one user holds it
    probe.check(api.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    ctx_ = std::make_shared<const cuda_c::Context>(cuda_c::Context{&api, context, name_});
    allocator_ = std::make_unique<CudaAllocator>(ctx_);
    compiler_ = std::make_unique<CudaCompiler>(detail::cat("sm_", major, minor));
  }

  const std::string& name() const override { return name_; }
  /// The GPU's name as the driver gives it ("NVIDIA H100 80GB HBM3").
  const std::string& gpu() const noexcept { return gpu_; }
  Allocator& allocator() override { return *allocator_; }
  Compiler& compiler() override { return *compiler_; }
  Target target() const override {
    Target t;
    t.language = Language::cuda;
    t.gpu = true;
    // 256 threads a block launch whatever a kernel's register count (65536 registers / 256 = 256,
    // and a thread has at most 255); at 1024, a kernel using over 64 could not launch
    t.max_local = std::min(max_threads_, 256);
    t.compute_units = multiprocessors_;
    t.warp = 32;
    t.tensor_cores = major_ >= 8;
    t.half = true;
    return t;
  }
  std::unique_ptr<Program> load(const std::string& binary, const std::string& name) override {
    return std::make_unique<CudaProgram>(ctx_, binary, name);
  }
  void synchronize() override { ctx_->call("cuCtxSynchronize", ctx_->api->cuCtxSynchronize); }
  /// Makes this GPU's context the calling thread's (for libraries that launch on it: NCCL).
  void make_current() const { ctx_->enter(); }
  /// Whether every launch and copy issued so far has finished (without waiting).
  bool idle() const {
    ctx_->enter();
    const cuda_c::CUresult r = ctx_->api->cuStreamQuery(cuda_c::CUstream{});
    if (r == cuda_c::CUDA_ERROR_NOT_READY) return false;
    ctx_->check(r, "cuStreamQuery");
    return true;
  }

 private:
  std::string name_, gpu_;
  int max_threads_ = 0;
  int multiprocessors_ = 1;
  int major_ = 0;  // compute capability
  std::shared_ptr<const cuda_c::Context> ctx_;
  std::unique_ptr<CudaAllocator> allocator_;
  std::unique_ptr<CudaCompiler> compiler_;
};

/// The CUDA device with driver ordinal `index` (a DeviceFactory).
inline std::unique_ptr<Device> open_cuda(int index) { return std::make_unique<CudaDevice>(index); }

}  // namespace backend
}  // namespace tinyt::inline v0
