// OpenCL backend: OpenCL C source -> a program binary (the driver's compiler) -> kernels launched
// on an in-order queue. The ICD loader (libOpenCL) is opened with dlopen at first use
// ($OPENCL_LIBRARY, then libOpenCL.so.1, libOpenCL.so) and reached only through the entry points
// bound from one table below: no OpenCL header or library is needed to build.
//
// Devices are numbered across every platform in order, all device types: CL:N is the N-th.
// Kernels take their buffers (cl_mem) first, then each symbolic variable as a 32-bit int.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../support.hpp"
#include "compiled.hpp"
#include "dlopen.hpp"

namespace tinyt::inline v0 {
namespace backend {

/// The OpenCL C API as this backend uses it: types and constants declared here with the values of
/// the Khronos headers (CL/cl.h), the bound entry points, and small helpers over them.
namespace opencl_c {
#define TINYT_CL_OPAQUE(name) \
  struct Opaque_##name;       \
  using cl_##name = Opaque_##name*;
TINYT_CL_OPAQUE(platform_id)
TINYT_CL_OPAQUE(device_id)
TINYT_CL_OPAQUE(context)
TINYT_CL_OPAQUE(command_queue)
TINYT_CL_OPAQUE(mem)
TINYT_CL_OPAQUE(program)
TINYT_CL_OPAQUE(kernel)
TINYT_CL_OPAQUE(event)
#undef TINYT_CL_OPAQUE
using cl_int = int32_t;
using cl_uint = uint32_t;   // also cl_bool and every *_info enum
using cl_ulong = uint64_t;  // also every bitfield: device types, memory flags, queue properties
using ContextNotify = void (*)(const char* error, const void* info, size_t size, void* user);
using BuildNotify = void (*)(cl_program program, void* user);

inline constexpr cl_int CL_SUCCESS = 0, CL_DEVICE_NOT_FOUND = -1,
                        CL_MEM_OBJECT_ALLOCATION_FAILURE = -4, CL_OUT_OF_RESOURCES = -5,
                        CL_INVALID_BUFFER_SIZE = -61, CL_PLATFORM_NOT_FOUND_KHR = -1001;
inline constexpr cl_uint CL_TRUE = 1;
inline constexpr cl_ulong CL_DEVICE_TYPE_ALL = 0xFFFFFFFF, CL_MEM_READ_WRITE = 1 << 0,
                          CL_QUEUE_PROFILING_ENABLE = 1 << 1;
inline constexpr cl_uint CL_PLATFORM_VERSION = 0x0901, CL_PLATFORM_NAME = 0x0902,
                         CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002,
                         CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004, CL_DEVICE_NAME = 0x102B,
                         CL_DRIVER_VERSION = 0x102D, CL_DEVICE_VERSION = 0x102F,
                         CL_DEVICE_EXTENSIONS = 0x1030, CL_PROGRAM_BINARY_SIZES = 0x1165,
                         CL_PROGRAM_BINARIES = 0x1166, CL_PROGRAM_BUILD_LOG = 0x1183,
                         CL_KERNEL_NUM_ARGS = 0x1191, CL_PROFILING_COMMAND_START = 0x1282,
                         CL_PROFILING_COMMAND_END = 0x1283;

/// "CL_INVALID_VALUE (-30)", or "CL error N" for a code not in the table.
inline std::string error_name(cl_int code) {
  // clang-format off
  static constexpr std::pair<cl_int, const char*> names[] = {
      {-1, "CL_DEVICE_NOT_FOUND"}, {-2, "CL_DEVICE_NOT_AVAILABLE"},
      {-3, "CL_COMPILER_NOT_AVAILABLE"}, {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {-5, "CL_OUT_OF_RESOURCES"}, {-6, "CL_OUT_OF_HOST_MEMORY"},
      {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"}, {-11, "CL_BUILD_PROGRAM_FAILURE"},
      {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"}, {-30, "CL_INVALID_VALUE"},
      {-32, "CL_INVALID_PLATFORM"}, {-33, "CL_INVALID_DEVICE"}, {-34, "CL_INVALID_CONTEXT"},
      {-35, "CL_INVALID_QUEUE_PROPERTIES"}, {-36, "CL_INVALID_COMMAND_QUEUE"},
      {-38, "CL_INVALID_MEM_OBJECT"}, {-42, "CL_INVALID_BINARY"}, {-43, "CL_INVALID_BUILD_OPTIONS"},
      {-44, "CL_INVALID_PROGRAM"}, {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
      {-46, "CL_INVALID_KERNEL_NAME"}, {-48, "CL_INVALID_KERNEL"}, {-49, "CL_INVALID_ARG_INDEX"},
      {-50, "CL_INVALID_ARG_VALUE"}, {-51, "CL_INVALID_ARG_SIZE"}, {-52, "CL_INVALID_KERNEL_ARGS"},
      {-53, "CL_INVALID_WORK_DIMENSION"}, {-54, "CL_INVALID_WORK_GROUP_SIZE"},
      {-55, "CL_INVALID_WORK_ITEM_SIZE"}, {-58, "CL_INVALID_EVENT"}, {-59, "CL_INVALID_OPERATION"},
      {-61, "CL_INVALID_BUFFER_SIZE"}, {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"}};
  // clang-format on
  for (const auto& [value, name] : names)
    if (value == code) return ::tinyt::detail::cat(name, " (", code, ")");
  return ::tinyt::detail::cat("CL error ", code);
}
}  // namespace opencl_c

// clang-format off
/// Every OpenCL function used: X(name, signature). All are in OpenCL 1.1, which every ICD loader
/// exports, so none is optional (hence clCreateCommandQueue, not 2.0's ...WithProperties).
#define TINYT_OPENCL_API(X)                                                                                  \
  X(clGetPlatformIDs, cl_int(cl_uint, cl_platform_id*, cl_uint*))                                            \
  X(clGetPlatformInfo, cl_int(cl_platform_id, cl_uint, size_t, void*, size_t*))                              \
  X(clGetDeviceIDs, cl_int(cl_platform_id, cl_ulong, cl_uint, cl_device_id*, cl_uint*))                      \
  X(clGetDeviceInfo, cl_int(cl_device_id, cl_uint, size_t, void*, size_t*))                                  \
  X(clCreateContext, cl_context(const intptr_t*, cl_uint, const cl_device_id*, ContextNotify, void*, cl_int*)) \
  X(clReleaseContext, cl_int(cl_context))                                                                    \
  X(clCreateCommandQueue, cl_command_queue(cl_context, cl_device_id, cl_ulong, cl_int*))                    \
  X(clReleaseCommandQueue, cl_int(cl_command_queue))                                                         \
  X(clCreateBuffer, cl_mem(cl_context, cl_ulong, size_t, void*, cl_int*))                                    \
  X(clReleaseMemObject, cl_int(cl_mem))                                                                      \
  X(clEnqueueWriteBuffer, cl_int(cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void*, cl_uint,    \
                                 const cl_event*, cl_event*))                                                \
  X(clEnqueueReadBuffer, cl_int(cl_command_queue, cl_mem, cl_uint, size_t, size_t, void*, cl_uint,           \
                                const cl_event*, cl_event*))                                                 \
  X(clEnqueueCopyBuffer, cl_int(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint,           \
                                const cl_event*, cl_event*))                                                 \
  X(clCreateProgramWithSource, cl_program(cl_context, cl_uint, const char**, const size_t*, cl_int*))       \
  X(clCreateProgramWithBinary, cl_program(cl_context, cl_uint, const cl_device_id*, const size_t*,          \
                                          const unsigned char**, cl_int*, cl_int*))                          \
  X(clBuildProgram, cl_int(cl_program, cl_uint, const cl_device_id*, const char*, BuildNotify, void*))       \
  X(clGetProgramBuildInfo, cl_int(cl_program, cl_device_id, cl_uint, size_t, void*, size_t*))               \
  X(clGetProgramInfo, cl_int(cl_program, cl_uint, size_t, void*, size_t*))                                  \
  X(clReleaseProgram, cl_int(cl_program))                                                                    \
  X(clCreateKernel, cl_kernel(cl_program, const char*, cl_int*))                                             \
  X(clGetKernelInfo, cl_int(cl_kernel, cl_uint, size_t, void*, size_t*))                                     \
  X(clSetKernelArg, cl_int(cl_kernel, cl_uint, size_t, const void*))                                         \
  X(clReleaseKernel, cl_int(cl_kernel))                                                                      \
  X(clEnqueueNDRangeKernel, cl_int(cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*,       \
                                   const size_t*, cl_uint, const cl_event*, cl_event*))                      \
  X(clFinish, cl_int(cl_command_queue))                                                                      \
  X(clWaitForEvents, cl_int(cl_uint, const cl_event*))                                                       \
  X(clGetEventProfilingInfo, cl_int(cl_event, cl_uint, size_t, void*, size_t*))                              \
  X(clReleaseEvent, cl_int(cl_event))
// clang-format on

namespace opencl_c {
/// Pointers to the table's functions, looked up in the opened ICD loader.
struct Api {
  Library lib;
#define TINYT_OPENCL_FIELD(name, ...) std::add_pointer_t<__VA_ARGS__> name = nullptr;
  TINYT_OPENCL_API(TINYT_OPENCL_FIELD)
#undef TINYT_OPENCL_FIELD
  explicit Api(Library opened) : lib(std::move(opened)) {
#define TINYT_OPENCL_BIND(name, ...) name = lib.symbol<__VA_ARGS__>(#name);
    TINYT_OPENCL_API(TINYT_OPENCL_BIND)
#undef TINYT_OPENCL_BIND
  }
};

/// The process-wide API, its loader opened at first use (a failure is retried at the next use).
/// Never unloaded: drivers keep threads and exit handlers that must outlive every device.
inline const Api& api() {
  static const Api* bound = [] {
    std::vector<std::string> candidates;
    if (const char* path = std::getenv("OPENCL_LIBRARY"); path && *path) candidates.push_back(path);
    candidates.insert(candidates.end(), {"libOpenCL.so.1", "libOpenCL.so"});
    return new Api(Library::open_first(candidates, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE));
  }();
  return *bound;
}

/// DeviceError naming `call` and the error, unless `code` is CL_SUCCESS.
inline void check(cl_int code, const char* call) {
  if (code != CL_SUCCESS)
    throw DeviceError(::tinyt::detail::cat("tinyt: OpenCL ", call, " failed: ", error_name(code)));
}
/// Calls `fn` of the API with the arguments given; DeviceError naming `fn` when it fails.
#define TINYT_CL_CHECK(fn, ...) \
  ::tinyt::backend::opencl_c::check(::tinyt::backend::opencl_c::api().fn(__VA_ARGS__), #fn)

/// An OpenCL object released with its owner: `Owned<cl_kernel>{kernel, api().clReleaseKernel}`.
template <class T> using Owned = std::unique_ptr<std::remove_pointer_t<T>, cl_int (*)(T)>;

/// A string-valued query `get(args..., size, value, size_ret)`, asked for its size first.
template <class Get, class... Args>
std::string info_string(const char* call, Get get, Args... args) {
  size_t size = 0;
  check(get(args..., 0, nullptr, &size), call);
  std::string out(size, '\0');
  check(get(args..., size, out.data(), nullptr), call);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}
inline std::string device_info(cl_device_id device, cl_uint param) {
  return info_string("clGetDeviceInfo", api().clGetDeviceInfo, device, param);
}

/// Every device of every platform, in the order CL:N counts them.
inline std::vector<std::pair<cl_platform_id, cl_device_id>> all_devices() {
  cl_uint count = 0;
  cl_int code = api().clGetPlatformIDs(0, nullptr, &count);
  if (code == CL_PLATFORM_NOT_FOUND_KHR) return {};  // the loader found no driver installed
  check(code, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(count);
  TINYT_CL_CHECK(clGetPlatformIDs, count, platforms.data(), nullptr);
  std::vector<std::pair<cl_platform_id, cl_device_id>> out;
  for (cl_platform_id platform : platforms) {
    code = api().clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
    if (code == CL_DEVICE_NOT_FOUND) continue;
    check(code, "clGetDeviceIDs");
    std::vector<cl_device_id> devices(count);
    TINYT_CL_CHECK(clGetDeviceIDs, platform, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr);
    for (cl_device_id device : devices) out.emplace_back(platform, device);
  }
  return out;
}

/// One device's context and in-order queue, shared by the device and the programs loaded on it.
/// In order, each command sees every one before it done: copies and launches need no events.
struct Queue {
  std::string name;  // "CL", "CL:1"
  cl_device_id device = nullptr;
  Owned<cl_context> context{nullptr, api().clReleaseContext};
  Owned<cl_command_queue> queue{nullptr, api().clReleaseCommandQueue};
};
}  // namespace opencl_c

/// OpenCL memory: one cl_mem per allocation, which is the handle.
class OpenCLAllocator final : public LruAllocator {
 public:
  explicit OpenCLAllocator(std::shared_ptr<const opencl_c::Queue> q) : q_(std::move(q)) {}
  ~OpenCLAllocator() override { release_cache(); }

 protected:
  // (a freed buffer is reused at once: the in-order queue runs what reads its old contents first)
  void* allocate(size_t nbytes) override {
    using namespace opencl_c;
    cl_int code = CL_SUCCESS;
    // OpenCL has no zero-byte buffer: every allocation gets at least a byte
    cl_mem mem = api().clCreateBuffer(q_->context.get(), CL_MEM_READ_WRITE,
                                      std::max<size_t>(nbytes, 1), nullptr, &code);
    // CL_INVALID_BUFFER_SIZE: more than CL_DEVICE_MAX_MEM_ALLOC_SIZE, which is out of memory too
    if (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
        code == CL_INVALID_BUFFER_SIZE)
      throw OutOfMemoryError(detail::cat("tinyt: ", q_->name, " cannot allocate ", nbytes,
                                         " bytes: ", error_name(code)));
    check(code, "clCreateBuffer");
    return mem;
  }
  // OpenCL deletes a released buffer only once the queued commands that use it are done
  void release(void* handle, size_t) override { opencl_c::api().clReleaseMemObject(mem(handle)); }

 public:
  void copyin(void* dst, const void* src, size_t nbytes) override {
    if (nbytes == 0) return;
    TINYT_CL_CHECK(clEnqueueWriteBuffer, q_->queue.get(), mem(dst), opencl_c::CL_TRUE, 0, nbytes,
                   src, 0, nullptr, nullptr);
  }
  void copyout(void* dst, void* src, size_t nbytes) override {
    if (nbytes == 0) return;
    TINYT_CL_CHECK(clEnqueueReadBuffer, q_->queue.get(), mem(src), opencl_c::CL_TRUE, 0, nbytes,
                   dst, 0, nullptr, nullptr);
  }
  // not waited for: every later launch or copy on the in-order queue sees it done
  void copy(void* dst, void* src, size_t nbytes) override {
    if (nbytes == 0) return;
    TINYT_CL_CHECK(clEnqueueCopyBuffer, q_->queue.get(), mem(src), mem(dst), 0, 0, nbytes, 0,
                   nullptr, nullptr);
  }

 private:
  static opencl_c::cl_mem mem(void* handle) { return static_cast<opencl_c::cl_mem>(handle); }
  std::shared_ptr<const opencl_c::Queue> q_;
};

/// OpenCL C source -> the driver's program binary for one device.
class OpenCLCompiler final : public Compiler {
 public:
  /// IEEE-exact division and square root, as on the CPU (the renderer turns contraction off).
  static constexpr const char* options = "-cl-fp32-correctly-rounded-divide-sqrt";

  OpenCLCompiler(std::shared_ptr<const opencl_c::Queue> q, std::string identity)
      : q_(std::move(q)), identity_(std::move(identity)) {}
  std::string identity() const override { return identity_; }

  std::string compile(const std::string& source, const std::string& name) override {
    using namespace opencl_c;
    const char* text = source.c_str();
    const size_t size = source.size();
    cl_int code = CL_SUCCESS;
    Owned<cl_program> program{
        api().clCreateProgramWithSource(q_->context.get(), 1, &text, &size, &code),
        api().clReleaseProgram};
    check(code, "clCreateProgramWithSource");
    build(*q_, program.get(), name, "\nsource:\n" + ::tinyt::detail::number_lines(source));
    size_t binary_size = 0;  // one device, so one binary
    TINYT_CL_CHECK(clGetProgramInfo, program.get(), CL_PROGRAM_BINARY_SIZES, sizeof binary_size,
                   &binary_size, nullptr);
    if (binary_size == 0)
      throw CompileError(
          detail::cat("tinyt: ", q_->name, " gave no binary for kernel '", name, "'"));
    std::string binary(binary_size, '\0');
    auto* bytes = reinterpret_cast<unsigned char*>(binary.data());
    TINYT_CL_CHECK(clGetProgramInfo, program.get(), CL_PROGRAM_BINARIES, sizeof bytes, &bytes,
                   nullptr);
    return binary;
  }

  /// Builds `program` (from source or binary) for the queue's device; CompileError with the build
  /// log, then `more` (the numbered source).
  static void build(const opencl_c::Queue& q, opencl_c::cl_program program, const std::string& name,
                    const std::string& more) {
    using namespace opencl_c;
    const cl_int code = api().clBuildProgram(program, 1, &q.device, options, nullptr, nullptr);
    if (code == CL_SUCCESS) return;
    std::string log;
    try {
      log = info_string("clGetProgramBuildInfo", api().clGetProgramBuildInfo, program, q.device,
                        CL_PROGRAM_BUILD_LOG);
    } catch (const DeviceError& e) {
      log = e.what();  // no log: the build's failure is still the error to report
    }
    throw CompileError(detail::cat("tinyt: ", q.name, " cannot build kernel '", name,
                                   "': ", error_name(code), "\nlog:\n", log, more));
  }

 private:
  std::shared_ptr<const opencl_c::Queue> q_;
  std::string identity_;
};

/// A kernel loaded on one device. Its arguments are the buffers, then one 32-bit int per
/// variable: the kernel's argument count tells how many buffers a launch passes.
class OpenCLProgram final : public Program {
 public:
  OpenCLProgram(std::shared_ptr<const opencl_c::Queue> q, const std::string& binary,
                const std::string& name)
      : q_(std::move(q)) {
    using namespace opencl_c;
    const size_t size = binary.size();
    const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
    cl_int status = CL_SUCCESS, code = CL_SUCCESS;
    program_.reset(api().clCreateProgramWithBinary(q_->context.get(), 1, &q_->device, &size, &bytes,
                                                   &status, &code));
    check(code != CL_SUCCESS ? code : status, "clCreateProgramWithBinary");
    OpenCLCompiler::build(*q_, program_.get(), name, "");
    kernel_.reset(api().clCreateKernel(program_.get(), name.c_str(), &code));
    check(code, "clCreateKernel");
    TINYT_CL_CHECK(clGetKernelInfo, kernel_.get(), CL_KERNEL_NUM_ARGS, sizeof args_, &args_,
                   nullptr);
  }

  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vars,
                const LaunchDims& dims, bool timed) override {
    using namespace opencl_c;
    if (bufs.size() + vars.size() != args_)
      throw DeviceError(detail::cat("tinyt: ", q_->name, ": a kernel of ", args_,
                                    " arguments launched with ", bufs.size(), " buffers and ",
                                    vars.size(), " variables"));
    const auto nbufs = static_cast<cl_uint>(bufs.size());
    size_t global[3], local[3];
    for (int d = 0; d < 3; ++d) {
      global[d] = static_cast<size_t>(dims.global[d]);
      local[d] = static_cast<size_t>(dims.local[d]);
    }
    cl_event raw = nullptr;
    {
      // arguments are the kernel's state until an enqueue copies them: one launch at a time
      std::lock_guard lock(mutex_);
      for (cl_uint i = 0; i < nbufs; ++i)
        TINYT_CL_CHECK(clSetKernelArg, kernel_.get(), i, sizeof(cl_mem), &bufs[i]);
      for (size_t i = 0; i < vars.size(); ++i) {
        if (vars[i] < std::numeric_limits<int32_t>::min() ||
            vars[i] > std::numeric_limits<int32_t>::max())
          throw DeviceError(detail::cat("tinyt: ", q_->name, ": variable ", i, " = ", vars[i],
                                        " does not fit the kernel's 32-bit int"));
        const auto value = static_cast<int32_t>(vars[i]);
        TINYT_CL_CHECK(clSetKernelArg, kernel_.get(), nbufs + static_cast<cl_uint>(i), sizeof value,
                       &value);
      }
      TINYT_CL_CHECK(clEnqueueNDRangeKernel, q_->queue.get(), kernel_.get(), 3, nullptr, global,
                     local, 0, nullptr, timed ? &raw : nullptr);
    }
    if (!timed) return 0;
    Owned<cl_event> event{raw, api().clReleaseEvent};
    TINYT_CL_CHECK(clWaitForEvents, 1, &raw);
    cl_ulong start = 0, end = 0;  // nanoseconds, by the device's clock
    TINYT_CL_CHECK(clGetEventProfilingInfo, raw, CL_PROFILING_COMMAND_START, sizeof start, &start,
                   nullptr);
    TINYT_CL_CHECK(clGetEventProfilingInfo, raw, CL_PROFILING_COMMAND_END, sizeof end, &end,
                   nullptr);
    return static_cast<double>(end - start) * 1e-9;
  }

 private:
  std::shared_ptr<const opencl_c::Queue> q_;  // first: the queue outlives the kernel on it
  opencl_c::Owned<opencl_c::cl_program> program_{nullptr, opencl_c::api().clReleaseProgram};
  opencl_c::Owned<opencl_c::cl_kernel> kernel_{nullptr, opencl_c::api().clReleaseKernel};
  opencl_c::cl_uint args_ = 0;
  std::mutex mutex_;
};

/// One OpenCL device, "CL" (index 0) or "CL:N": a context, and an in-order queue with profiling.
class OpenCLDevice final : public Device {
 public:
  /// DeviceError when the loader cannot be opened (naming each path tried) or there is no device
  /// `index` (naming those there are).
  explicit OpenCLDevice(int index) {
    using namespace opencl_c;
    const auto devices = all_devices();
    if (index < 0 || static_cast<size_t>(index) >= devices.size()) {
      std::string listing;
      for (size_t i = 0; i < devices.size(); ++i)
        listing += detail::cat("\n  CL:", i, ": ", device_info(devices[i].second, CL_DEVICE_NAME));
      throw DeviceError(detail::cat("tinyt: no OpenCL device CL:", index, " (", devices.size(),
                                    devices.size() == 1 ? " device" : " devices", " found)",
                                    listing));
    }
    // not a structured binding: clang before 16 cannot capture one in the lambda below
    const cl_platform_id platform = devices[static_cast<size_t>(index)].first;
    const cl_device_id device = devices[static_cast<size_t>(index)].second;
    auto q = std::make_shared<opencl_c::Queue>();
    q->name = index == 0 ? "CL" : detail::cat("CL:", index);
    q->device = device;
    cl_int code = CL_SUCCESS;
    q->context.reset(api().clCreateContext(nullptr, 1, &device, nullptr, nullptr, &code));
    check(code, "clCreateContext");
    // profiling always on: a timed launch (BEAM search) needs it, and it costs little
    q->queue.reset(
        api().clCreateCommandQueue(q->context.get(), device, CL_QUEUE_PROFILING_ENABLE, &code));
    check(code, "clCreateCommandQueue");
    q_ = std::move(q);

    size_t max_group = 1;
    TINYT_CL_CHECK(clGetDeviceInfo, device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_group,
                   &max_group, nullptr);
    target_.language = Language::opencl;
    target_.gpu = true;
    target_.max_local = std::min<int64_t>(static_cast<int64_t>(max_group), 256);
    cl_uint units = 1;
    TINYT_CL_CHECK(clGetDeviceInfo, device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
    target_.compute_units = units;
    target_.half =
        device_info(device, CL_DEVICE_EXTENSIONS).find("cl_khr_fp16") != std::string::npos;

    const auto platform_info = [platform](cl_uint param) {
      return info_string("clGetPlatformInfo", api().clGetPlatformInfo, platform, param);
    };
    allocator_ = std::make_unique<OpenCLAllocator>(q_);
    compiler_ = std::make_unique<OpenCLCompiler>(
        q_,
        detail::cat("OpenCL | ", platform_info(CL_PLATFORM_NAME), " ",
                    platform_info(CL_PLATFORM_VERSION), " | ", device_info(device, CL_DEVICE_NAME),
                    " | ", device_info(device, CL_DEVICE_VERSION), " | ",
                    device_info(device, CL_DRIVER_VERSION), " | ", OpenCLCompiler::options));
  }

  const std::string& name() const override { return q_->name; }
  Allocator& allocator() override { return *allocator_; }
  Compiler& compiler() override { return *compiler_; }
  Target target() const override { return target_; }
  std::unique_ptr<Program> load(const std::string& binary, const std::string& name) override {
    return std::make_unique<OpenCLProgram>(q_, binary, name);
  }
  void synchronize() override { TINYT_CL_CHECK(clFinish, q_->queue.get()); }

 private:
  std::shared_ptr<const opencl_c::Queue> q_;
  Target target_;
  std::unique_ptr<OpenCLAllocator> allocator_;
  std::unique_ptr<OpenCLCompiler> compiler_;
};

/// The OpenCL device CL:`index`, for register_device("CL", open_opencl).
inline std::unique_ptr<Device> open_opencl(int index) {
  return std::make_unique<OpenCLDevice>(index);
}

}  // namespace backend
}  // namespace tinyt::inline v0

#undef TINYT_OPENCL_API
#undef TINYT_CL_CHECK
