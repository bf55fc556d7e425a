// WebGPU backend runtime: WGSL source -> a shader module and compute pipeline -> dispatches on
// the device's queue. wgpu-native (libwgpu_native, as PyPI's `wgpu` wheel ships it) is opened with
// dlopen at first use ($WEBGPU_PATH, then the name the loader finds) and reached only through the
// entry points bound from one table below: no WebGPU header or library is needed to build. Its
// version is checked when it is opened: the struct layouts declared here are webgpu-headers' as
// wgpu-native 29 has them.
//
// A kernel's storage buffers are bindings 0..n-1 of bind group 0, in DEFINE_GLOBAL order; its
// symbolic variables, when it has any, are a uniform `array<vec4<i32>, count>` at binding n, the
// i-th in element i's x (a uniform array's elements are 16 bytes apart). A buffer is bound once
// per dispatch: WebGPU refuses one buffer bound twice where either binding writes it.
// (In wgpu-native 29 wgpuInstanceWaitAny is not implemented: waits are wgpuDevicePoll.)
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../support.hpp"
#include "compiled.hpp"
#include "dlopen.hpp"

namespace tinyt::inline v0 {
namespace backend {

/// The webgpu.h API as this backend uses it: opaque handles, the structs it fills (their fields
/// and order as webgpu-headers declares them; tests/test_webgpu_abi.cpp checks them against the
/// real header), the constants' values, and the bound entry points.
namespace webgpu_c {
#define TINYT_WGPU_OPAQUE(name) \
  struct Opaque##name;          \
  using WGPU##name = Opaque##name*;
TINYT_WGPU_OPAQUE(Instance)
TINYT_WGPU_OPAQUE(Adapter)
TINYT_WGPU_OPAQUE(Device)
TINYT_WGPU_OPAQUE(Queue)
TINYT_WGPU_OPAQUE(Buffer)
TINYT_WGPU_OPAQUE(ShaderModule)
TINYT_WGPU_OPAQUE(BindGroupLayout)
TINYT_WGPU_OPAQUE(BindGroup)
TINYT_WGPU_OPAQUE(PipelineLayout)
TINYT_WGPU_OPAQUE(ComputePipeline)
TINYT_WGPU_OPAQUE(CommandEncoder)
TINYT_WGPU_OPAQUE(CommandBuffer)
TINYT_WGPU_OPAQUE(ComputePassEncoder)
#undef TINYT_WGPU_OPAQUE
using WGPUBool = uint32_t;
using WGPUFlags = uint64_t;  // buffer usages, map modes, shader stages
using WGPUEnum = uint32_t;   // every enum (the header forces them to 32 bits)

struct WGPUStringView {
  const char* data = nullptr;
  size_t length = 0;
};
inline WGPUStringView view(std::string_view s) { return {s.data(), s.size()}; }
inline std::string str(WGPUStringView s) {
  if (!s.data) return "";
  return s.length == std::numeric_limits<size_t>::max() ? std::string(s.data) : std::string(s.data, s.length);
}
struct WGPUChainedStruct {
  WGPUChainedStruct* next = nullptr;
  WGPUEnum sType = 0;
};
struct WGPUFuture {
  uint64_t id = 0;
};

// callbacks: (status, result, message, userdata1, userdata2)
using RequestAdapterCallback = void (*)(WGPUEnum, WGPUAdapter, WGPUStringView, void*, void*);
using RequestDeviceCallback = void (*)(WGPUEnum, WGPUDevice, WGPUStringView, void*, void*);
using BufferMapCallback = void (*)(WGPUEnum, WGPUStringView, void*, void*);
using PopErrorScopeCallback = void (*)(WGPUEnum, WGPUEnum, WGPUStringView, void*, void*);
using UncapturedErrorCallback = void (*)(const WGPUDevice*, WGPUEnum, WGPUStringView, void*, void*);
using DeviceLostCallback = void (*)(const WGPUDevice*, WGPUEnum, WGPUStringView, void*, void*);
template <class Callback> struct CallbackInfo {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUEnum mode = 0;
  Callback callback = nullptr;
  void* userdata1 = nullptr;
  void* userdata2 = nullptr;
};
struct WGPUUncapturedErrorCallbackInfo {
  WGPUChainedStruct* nextInChain = nullptr;
  UncapturedErrorCallback callback = nullptr;
  void* userdata1 = nullptr;
  void* userdata2 = nullptr;
};
struct WGPUAdapterInfo {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView vendor, architecture, device, description;
  WGPUEnum backendType = 0, adapterType = 0;
  uint32_t vendorID = 0, deviceID = 0, subgroupMinSize = 0, subgroupMaxSize = 0;
};
struct WGPUQueueDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
};
struct WGPUDeviceDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  size_t requiredFeatureCount = 0;
  const WGPUEnum* requiredFeatures = nullptr;
  const void* requiredLimits = nullptr;  // null: the default limits, those a browser gives too
  WGPUQueueDescriptor defaultQueue;
  CallbackInfo<DeviceLostCallback> deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
};
struct WGPUBufferDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  WGPUFlags usage = 0;
  uint64_t size = 0;
  WGPUBool mappedAtCreation = 0;
};
struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;
  WGPUStringView code;
};
struct WGPUShaderModuleDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
};
struct WGPUBufferBindingLayout {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUEnum type = 0;
  WGPUBool hasDynamicOffset = 0;
  uint64_t minBindingSize = 0;
};
struct WGPUSamplerBindingLayout {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUEnum type = 0;
};
struct WGPUTextureBindingLayout {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUEnum sampleType = 0, viewDimension = 0;
  WGPUBool multisampled = 0;
};
struct WGPUStorageTextureBindingLayout {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUEnum access = 0, format = 0, viewDimension = 0;
};
struct WGPUBindGroupLayoutEntry {
  WGPUChainedStruct* nextInChain = nullptr;
  uint32_t binding = 0;
  WGPUFlags visibility = 0;
  uint32_t bindingArraySize = 0;
  WGPUBufferBindingLayout buffer;
  WGPUSamplerBindingLayout sampler;            // (unused: zero is "not used")
  WGPUTextureBindingLayout texture;            // (unused)
  WGPUStorageTextureBindingLayout storageTexture;  // (unused)
};
struct WGPUBindGroupLayoutDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  size_t entryCount = 0;
  const WGPUBindGroupLayoutEntry* entries = nullptr;
};
struct WGPUPipelineLayoutDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  size_t bindGroupLayoutCount = 0;
  const WGPUBindGroupLayout* bindGroupLayouts = nullptr;
  uint32_t immediateSize = 0;
};
struct WGPUComputeState {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUShaderModule module = nullptr;
  WGPUStringView entryPoint;
  size_t constantCount = 0;
  const void* constants = nullptr;
};
struct WGPUComputePipelineDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  WGPUPipelineLayout layout = nullptr;
  WGPUComputeState compute;
};
struct WGPUBindGroupEntry {
  WGPUChainedStruct* nextInChain = nullptr;
  uint32_t binding = 0;
  WGPUBuffer buffer = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
  void* sampler = nullptr;
  void* textureView = nullptr;
};
struct WGPUBindGroupDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  WGPUBindGroupLayout layout = nullptr;
  size_t entryCount = 0;
  const WGPUBindGroupEntry* entries = nullptr;
};

inline constexpr WGPUEnum STYPE_SHADER_SOURCE_WGSL = 0x2, CALLBACK_MODE_ALLOW_PROCESS_EVENTS = 0x2, STATUS_SUCCESS = 0x1,
                          ERROR_FILTER_VALIDATION = 0x1, ERROR_FILTER_OUT_OF_MEMORY = 0x2, ERROR_TYPE_NO_ERROR = 0x1,
                          BUFFER_BINDING_UNIFORM = 0x2, BUFFER_BINDING_STORAGE = 0x3, FEATURE_SHADER_F16 = 0xB;
inline constexpr WGPUFlags USAGE_MAP_READ = 0x1, USAGE_COPY_SRC = 0x4, USAGE_COPY_DST = 0x8, USAGE_UNIFORM = 0x40,
                           USAGE_STORAGE = 0x80, MAP_MODE_READ = 0x1, SHADER_STAGE_COMPUTE = 0x4;
/// The wgpu-native release whose struct layouts these are (wgpuGetVersion: one byte a part).
inline constexpr uint32_t REQUIRED_VERSION_MAJOR = 29;
}  // namespace webgpu_c

// clang-format off
/// The entry points used, with their signatures.
#define TINYT_WEBGPU_API(X)                                                                                       \
  X(wgpuGetVersion, uint32_t())                                                                                   \
  X(wgpuCreateInstance, WGPUInstance(const void*))                                                                \
  X(wgpuInstanceRequestAdapter, WGPUFuture(WGPUInstance, const void*, CallbackInfo<RequestAdapterCallback>))      \
  X(wgpuInstanceProcessEvents, void(WGPUInstance))                                                                \
  X(wgpuInstanceRelease, void(WGPUInstance))                                                                      \
  X(wgpuAdapterGetInfo, WGPUEnum(WGPUAdapter, WGPUAdapterInfo*))                                                 \
  X(wgpuAdapterInfoFreeMembers, void(WGPUAdapterInfo))                                                            \
  X(wgpuAdapterHasFeature, WGPUBool(WGPUAdapter, WGPUEnum))                                                       \
  X(wgpuAdapterRequestDevice, WGPUFuture(WGPUAdapter, const WGPUDeviceDescriptor*, CallbackInfo<RequestDeviceCallback>)) \
  X(wgpuAdapterRelease, void(WGPUAdapter))                                                                        \
  X(wgpuDeviceGetQueue, WGPUQueue(WGPUDevice))                                                                    \
  X(wgpuDevicePoll, WGPUBool(WGPUDevice, WGPUBool, const void*))                                                  \
  X(wgpuDevicePushErrorScope, void(WGPUDevice, WGPUEnum))                                                         \
  X(wgpuDevicePopErrorScope, WGPUFuture(WGPUDevice, CallbackInfo<PopErrorScopeCallback>))                         \
  X(wgpuDeviceCreateBuffer, WGPUBuffer(WGPUDevice, const WGPUBufferDescriptor*))                                  \
  X(wgpuDeviceCreateShaderModule, WGPUShaderModule(WGPUDevice, const WGPUShaderModuleDescriptor*))                \
  X(wgpuDeviceCreateBindGroupLayout, WGPUBindGroupLayout(WGPUDevice, const WGPUBindGroupLayoutDescriptor*))       \
  X(wgpuDeviceCreatePipelineLayout, WGPUPipelineLayout(WGPUDevice, const WGPUPipelineLayoutDescriptor*))          \
  X(wgpuDeviceCreateComputePipeline, WGPUComputePipeline(WGPUDevice, const WGPUComputePipelineDescriptor*))       \
  X(wgpuDeviceCreateBindGroup, WGPUBindGroup(WGPUDevice, const WGPUBindGroupDescriptor*))                         \
  X(wgpuDeviceCreateCommandEncoder, WGPUCommandEncoder(WGPUDevice, const void*))                                  \
  X(wgpuDeviceRelease, void(WGPUDevice))                                                                          \
  X(wgpuQueueWriteBuffer, void(WGPUQueue, WGPUBuffer, uint64_t, const void*, size_t))                             \
  X(wgpuQueueSubmit, void(WGPUQueue, size_t, const WGPUCommandBuffer*))                                           \
  X(wgpuQueueRelease, void(WGPUQueue))                                                                            \
  X(wgpuBufferMapAsync, WGPUFuture(WGPUBuffer, WGPUFlags, size_t, size_t, CallbackInfo<BufferMapCallback>))       \
  X(wgpuBufferGetConstMappedRange, const void*(WGPUBuffer, size_t, size_t))                                       \
  X(wgpuBufferUnmap, void(WGPUBuffer))                                                                            \
  X(wgpuBufferGetSize, uint64_t(WGPUBuffer))                                                                      \
  X(wgpuBufferDestroy, void(WGPUBuffer))                                                                          \
  X(wgpuBufferRelease, void(WGPUBuffer))                                                                          \
  X(wgpuShaderModuleRelease, void(WGPUShaderModule))                                                              \
  X(wgpuBindGroupLayoutRelease, void(WGPUBindGroupLayout))                                                        \
  X(wgpuPipelineLayoutRelease, void(WGPUPipelineLayout))                                                          \
  X(wgpuComputePipelineRelease, void(WGPUComputePipeline))                                                        \
  X(wgpuBindGroupRelease, void(WGPUBindGroup))                                                                    \
  X(wgpuCommandEncoderBeginComputePass, WGPUComputePassEncoder(WGPUCommandEncoder, const void*))                  \
  X(wgpuCommandEncoderCopyBufferToBuffer, void(WGPUCommandEncoder, WGPUBuffer, uint64_t, WGPUBuffer, uint64_t, uint64_t)) \
  X(wgpuCommandEncoderFinish, WGPUCommandBuffer(WGPUCommandEncoder, const void*))                                 \
  X(wgpuCommandEncoderRelease, void(WGPUCommandEncoder))                                                          \
  X(wgpuCommandBufferRelease, void(WGPUCommandBuffer))                                                            \
  X(wgpuComputePassEncoderSetPipeline, void(WGPUComputePassEncoder, WGPUComputePipeline))                         \
  X(wgpuComputePassEncoderSetBindGroup, void(WGPUComputePassEncoder, uint32_t, WGPUBindGroup, size_t, const uint32_t*)) \
  X(wgpuComputePassEncoderDispatchWorkgroups, void(WGPUComputePassEncoder, uint32_t, uint32_t, uint32_t))         \
  X(wgpuComputePassEncoderEnd, void(WGPUComputePassEncoder))                                                      \
  X(wgpuComputePassEncoderRelease, void(WGPUComputePassEncoder))
// clang-format on

namespace webgpu_c {
/// Pointers to the table's functions, looked up in the opened library.
struct Api {
  Library lib;
#define TINYT_WEBGPU_FIELD(name, ...) std::add_pointer_t<__VA_ARGS__> name = nullptr;
  TINYT_WEBGPU_API(TINYT_WEBGPU_FIELD)
#undef TINYT_WEBGPU_FIELD
  explicit Api(Library opened) : lib(std::move(opened)) {
#define TINYT_WEBGPU_BIND(name, ...) name = lib.symbol<__VA_ARGS__>(#name);
    TINYT_WEBGPU_API(TINYT_WEBGPU_BIND)
#undef TINYT_WEBGPU_BIND
    const uint32_t version = wgpuGetVersion();
    if (version >> 24 != REQUIRED_VERSION_MAJOR)
      throw DeviceError(::tinyt::detail::cat("tinyt: WebGPU library '", lib.path(), "' is wgpu-native ", version >> 24, ".",
                                             (version >> 16) & 0xFF, ".", (version >> 8) & 0xFF, ".", version & 0xFF,
                                             "; tinyt needs wgpu-native ", REQUIRED_VERSION_MAJOR,
                                             " (PyPI wgpu 0.32.0; set WEBGPU_PATH to its libwgpu_native-release.so)"));
  }
};

/// The process-wide API, its library opened at first use. Never unloaded: the Vulkan driver under
/// it keeps threads that must outlive every device.
inline const Api& api() {
  static const Api* bound = [] {
    std::vector<std::string> candidates;
    if (const char* path = std::getenv("WEBGPU_PATH"); path && *path) candidates.push_back(path);
    candidates.insert(candidates.end(), {"libwgpu_native-release.so", "libwgpu_native.so"});
    return new Api(Library::open_first(candidates, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE));
  }();
  return *bound;
}

/// An object released with its owner: `Owned<WGPUBuffer>{buffer, api().wgpuBufferRelease}`.
template <class T> using Owned = std::unique_ptr<std::remove_pointer_t<T>, void (*)(T)>;

/// What a request (an adapter's, a device's) gives its callback: the handle, null where it failed,
/// and the message.
template <class Handle> struct Requested {
  Handle handle = nullptr;
  std::string message;
  /// The callback that fills this in when the instance processes its events.
  CallbackInfo<void (*)(WGPUEnum, Handle, WGPUStringView, void*, void*)> callback() {
    CallbackInfo<void (*)(WGPUEnum, Handle, WGPUStringView, void*, void*)> info;
    info.mode = CALLBACK_MODE_ALLOW_PROCESS_EVENTS;
    info.callback = [](WGPUEnum status, Handle h, WGPUStringView message, void* user, void*) {
      auto* r = static_cast<Requested*>(user);
      if (status == STATUS_SUCCESS) r->handle = h;
      r->message = str(message);
    };
    info.userdata1 = this;
    return info;
  }
};

/// One device and its queue, shared by the device and what is made on it.
struct Context {
  std::string name;  // "WEBGPU"
  WGPUInstance instance = nullptr;
  WGPUDevice device = nullptr;
  WGPUQueue queue = nullptr;
  std::string adapter;  // the adapter's description, for the compiler's identity
  bool f16 = false;
  std::mutex mutex;  // one submission or wait at a time (wgpu-native's objects are thread-safe; the
                     // error scopes here are not)
  std::string uncaptured;  // the first error no scope caught (a dispatch's), not yet reported

  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() {
    if (queue) api().wgpuQueueRelease(queue);
    if (device) api().wgpuDeviceRelease(device);
    if (instance) api().wgpuInstanceRelease(instance);
  }
  /// DeviceError with the error a submission raised that no scope caught, if there was one.
  void throw_uncaptured(const std::string& what) {
    if (uncaptured.empty()) return;
    throw DeviceError(::tinyt::detail::cat("tinyt: ", name, " ", what, ": ", std::exchange(uncaptured, "")));
  }

  /// Waits until everything submitted finished, then runs the callbacks it made ready.
  void wait() const {
    api().wgpuDevicePoll(device, 1, nullptr);
    api().wgpuInstanceProcessEvents(instance);
  }
  /// `make()` inside a validation and out-of-memory error scope; CompileError (validation) or
  /// OutOfMemoryError naming `what` when the scope caught an error.
  template <class Make> auto checked(const std::string& what, Make make) const {
    api().wgpuDevicePushErrorScope(device, ERROR_FILTER_OUT_OF_MEMORY);
    api().wgpuDevicePushErrorScope(device, ERROR_FILTER_VALIDATION);
    auto made = make();
    struct Caught {
      WGPUEnum type = 0;
      std::string message;
      bool done = false;
    } validation, memory;
    CallbackInfo<PopErrorScopeCallback> info;
    info.mode = CALLBACK_MODE_ALLOW_PROCESS_EVENTS;
    info.callback = [](WGPUEnum status, WGPUEnum type, WGPUStringView message, void* user, void*) {
      auto* c = static_cast<Caught*>(user);
      c->done = true;
      c->type = status == STATUS_SUCCESS ? type : ERROR_TYPE_NO_ERROR;
      c->message = str(message);
    };
    info.userdata1 = &validation;
    api().wgpuDevicePopErrorScope(device, info);
    info.userdata1 = &memory;
    api().wgpuDevicePopErrorScope(device, info);
    for (int i = 0; i < 1000 && !(validation.done && memory.done); ++i) wait();
    if (memory.type != ERROR_TYPE_NO_ERROR) throw OutOfMemoryError(::tinyt::detail::cat("tinyt: ", name, " ", what, ": ", memory.message));
    if (validation.type != ERROR_TYPE_NO_ERROR) throw CompileError(::tinyt::detail::cat("tinyt: ", name, " ", what, ": ", validation.message));
    return made;
  }
};
}  // namespace webgpu_c

/// WebGPU memory: one storage buffer per allocation, which is the handle. Sizes are whole 32-bit
/// words (WebGPU copies and binds words).
class WebGPUAllocator final : public LruAllocator {
 public:
  explicit WebGPUAllocator(std::shared_ptr<webgpu_c::Context> c) : c_(std::move(c)) {}
  ~WebGPUAllocator() override { release_cache(); }

  void copyin(void* dst, const void* src, size_t nbytes) override {
    if (nbytes == 0) return;
    std::lock_guard lock(c_->mutex);
    if (nbytes % 4 == 0) {
      webgpu_c::api().wgpuQueueWriteBuffer(c_->queue, buffer(dst), 0, src, nbytes);
    } else {  // the last word whole: its bytes past nbytes are the block's own, unused
      std::vector<uint8_t> words(words_of(nbytes), 0);
      std::memcpy(words.data(), src, nbytes);
      webgpu_c::api().wgpuQueueWriteBuffer(c_->queue, buffer(dst), 0, words.data(), words.size());
    }
  }
  void copyout(void* dst, void* src, size_t nbytes) override {
    using namespace webgpu_c;
    if (nbytes == 0) return;
    std::lock_guard lock(c_->mutex);
    const size_t n = words_of(nbytes);
    WGPUBufferDescriptor desc;
    desc.usage = USAGE_MAP_READ | USAGE_COPY_DST;
    desc.size = n;
    Owned<WGPUBuffer> staging{c_->checked("copyout", [&] { return api().wgpuDeviceCreateBuffer(c_->device, &desc); }),
                              api().wgpuBufferRelease};
    submit_copy(buffer(src), staging.get(), n);
    bool mapped = false;
    CallbackInfo<BufferMapCallback> info;
    info.mode = CALLBACK_MODE_ALLOW_PROCESS_EVENTS;
    info.callback = [](WGPUEnum status, WGPUStringView, void* user, void*) { *static_cast<bool*>(user) = status == STATUS_SUCCESS; };
    info.userdata1 = &mapped;
    api().wgpuBufferMapAsync(staging.get(), MAP_MODE_READ, 0, n, info);
    c_->wait();
    c_->throw_uncaptured("copyout");
    if (!mapped) throw DeviceError(detail::cat("tinyt: ", c_->name, " cannot map ", n, " bytes to read them back"));
    std::memcpy(dst, api().wgpuBufferGetConstMappedRange(staging.get(), 0, n), nbytes);
    api().wgpuBufferUnmap(staging.get());
  }
  void copy(void* dst, void* src, size_t nbytes) override {
    if (nbytes == 0) return;
    std::lock_guard lock(c_->mutex);
    // whole words: the destination's block has them (a copy of a buffer into one of its size)
    submit_copy(buffer(src), buffer(dst), words_of(nbytes));
  }

 protected:
  void* allocate(size_t nbytes) override {
    using namespace webgpu_c;
    WGPUBufferDescriptor desc;
    desc.usage = USAGE_STORAGE | USAGE_COPY_SRC | USAGE_COPY_DST;
    desc.size = nbytes;
    std::lock_guard lock(c_->mutex);
    try {
      return c_->checked(detail::cat("cannot allocate ", nbytes, " bytes"), [&] { return api().wgpuDeviceCreateBuffer(c_->device, &desc); });
    } catch (const CompileError& e) {  // a size past the device's limit is a validation error
      throw OutOfMemoryError(e.what());
    }
  }
  void release(void* handle, size_t) override {
    webgpu_c::api().wgpuBufferDestroy(buffer(handle));
    webgpu_c::api().wgpuBufferRelease(buffer(handle));
  }
  size_t block_size(size_t nbytes) const override { return words_of(std::max<size_t>(nbytes, 1)); }

 private:
  static size_t words_of(size_t nbytes) { return (nbytes + 3) / 4 * 4; }
  static webgpu_c::WGPUBuffer buffer(void* handle) { return static_cast<webgpu_c::WGPUBuffer>(handle); }
  // (under the context's mutex)
  void submit_copy(webgpu_c::WGPUBuffer from, webgpu_c::WGPUBuffer to, size_t n) {
    using namespace webgpu_c;
    Owned<WGPUCommandEncoder> encoder{api().wgpuDeviceCreateCommandEncoder(c_->device, nullptr), api().wgpuCommandEncoderRelease};
    api().wgpuCommandEncoderCopyBufferToBuffer(encoder.get(), from, 0, to, 0, n);
    Owned<WGPUCommandBuffer> commands{api().wgpuCommandEncoderFinish(encoder.get(), nullptr), api().wgpuCommandBufferRelease};
    WGPUCommandBuffer raw = commands.get();
    api().wgpuQueueSubmit(c_->queue, 1, &raw);
  }
  std::shared_ptr<webgpu_c::Context> c_;
};

/// WGSL source, validated by the device's shader compiler; the "binary" is the source itself
/// (a WebGPU device takes nothing else), so nothing is cached on disk.
class WebGPUCompiler final : public Compiler {
 public:
  explicit WebGPUCompiler(std::shared_ptr<webgpu_c::Context> c) : c_(std::move(c)) {}
  std::string identity() const override { return "WebGPU | wgpu-native | " + c_->adapter; }
  bool disk_cacheable() const override { return false; }
  std::string compile(const std::string& source, const std::string& name) override {
    (void)module(*c_, source, name);
    return source;
  }
  /// The shader module of `source`; CompileError with the compiler's message and the numbered source.
  static webgpu_c::Owned<webgpu_c::WGPUShaderModule> module(webgpu_c::Context& c, const std::string& source, const std::string& name) {
    using namespace webgpu_c;
    WGPUShaderSourceWGSL wgsl;
    wgsl.chain.sType = STYPE_SHADER_SOURCE_WGSL;
    wgsl.code = view(source);
    WGPUShaderModuleDescriptor desc;
    desc.nextInChain = &wgsl.chain;
    std::lock_guard lock(c.mutex);
    WGPUShaderModule made = nullptr;
    try {
      made = c.checked(detail::cat("cannot compile kernel '", name, "'"), [&] { return api().wgpuDeviceCreateShaderModule(c.device, &desc); });
    } catch (const CompileError& e) {
      throw CompileError(detail::cat(e.what(), "\nsource:\n", ::tinyt::detail::number_lines(source)));
    }
    return {made, api().wgpuShaderModuleRelease};
  }

 private:
  std::shared_ptr<webgpu_c::Context> c_;
};

/// A compute pipeline of one kernel (entry point `name`). Its bind group layout is made at the
/// first launch, from the buffers and variables given: n storage buffers, then the variables.
class WebGPUProgram final : public Program {
 public:
  WebGPUProgram(std::shared_ptr<webgpu_c::Context> c, const std::string& source, const std::string& name)
      : c_(std::move(c)), name_(name), module_(WebGPUCompiler::module(*c_, source, name)) {}

  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vars, const LaunchDims& dims, bool timed) override {
    using namespace webgpu_c;
    uint32_t groups[3];
    for (int d = 0; d < 3; ++d) {
      if (dims.local[d] < 1 || dims.global[d] % dims.local[d] != 0 || dims.global[d] / dims.local[d] > 65535)
        throw DeviceError(detail::cat("tinyt: ", c_->name, ": kernel '", name_, "' launched with ", dims.global[d], " work-items in groups of ",
                                      dims.local[d], " along dimension ", d, " (whole groups, at most 65535 of them)"));
      groups[d] = static_cast<uint32_t>(dims.global[d] / dims.local[d]);
    }
    std::vector<int32_t> values;
    for (int64_t v : vars) {
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        throw DeviceError(detail::cat("tinyt: ", c_->name, ": variable ", v, " does not fit the kernel's 32-bit int"));
      values.push_back(static_cast<int32_t>(v));
    }
    std::unique_lock lock(c_->mutex);
    prepare(bufs.size(), values.size());
    Owned<WGPUCommandEncoder> encoder{api().wgpuDeviceCreateCommandEncoder(c_->device, nullptr), api().wgpuCommandEncoderRelease};
    std::vector<WGPUBindGroupEntry> entries(bufs.size());
    std::vector<Owned<WGPUBuffer>> snapshots;
    for (size_t i = 0; i < bufs.size(); ++i) {
      entries[i].binding = static_cast<uint32_t>(i);
      entries[i].buffer = static_cast<WGPUBuffer>(bufs[i]);
      entries[i].size = std::numeric_limits<uint64_t>::max();  // WGPU_WHOLE_SIZE
      // WebGPU binds a writable buffer once per dispatch. A buffer that is also an input (an
      // in-place update: the output comes first) is read from a copy made just before, which
      // gives what the kernel reads in place: the scheduler fuses in place only kernels whose
      // elements read their own old value.
      if (std::find(bufs.begin(), bufs.begin() + static_cast<std::ptrdiff_t>(i), bufs[i]) != bufs.begin() + static_cast<std::ptrdiff_t>(i)) {
        const uint64_t size = api().wgpuBufferGetSize(entries[i].buffer);
        WGPUBufferDescriptor desc;
        desc.usage = USAGE_STORAGE | USAGE_COPY_DST;
        desc.size = size;
        // (released, not destroyed: the dispatch submitted below still reads it)
        snapshots.emplace_back(api().wgpuDeviceCreateBuffer(c_->device, &desc), api().wgpuBufferRelease);
        api().wgpuCommandEncoderCopyBufferToBuffer(encoder.get(), entries[i].buffer, 0, snapshots.back().get(), 0, size);
        entries[i].buffer = snapshots.back().get();
      }
    }
    if (!values.empty()) {  // a uniform array's elements are 16 bytes apart: one int each, padded
      // (written in queue order: the dispatches submitted before see their own values)
      std::vector<int32_t> padded(values.size() * 4, 0);
      for (size_t i = 0; i < values.size(); ++i) padded[i * 4] = values[i];
      api().wgpuQueueWriteBuffer(c_->queue, uniforms_.get(), 0, padded.data(), padded.size() * sizeof(int32_t));
      WGPUBindGroupEntry e;
      e.binding = static_cast<uint32_t>(bufs.size());
      e.buffer = uniforms_.get();
      e.size = padded.size() * sizeof(int32_t);
      entries.push_back(e);
    }
    WGPUBindGroupDescriptor group_desc;
    group_desc.layout = group_layout_.get();
    group_desc.entryCount = entries.size();
    group_desc.entries = entries.data();
    // (no error scope: popping one waits for the device; an error is the uncaptured one below)
    Owned<WGPUBindGroup> group{api().wgpuDeviceCreateBindGroup(c_->device, &group_desc), api().wgpuBindGroupRelease};
    const auto start = std::chrono::steady_clock::now();
    Owned<WGPUComputePassEncoder> pass{api().wgpuCommandEncoderBeginComputePass(encoder.get(), nullptr), api().wgpuComputePassEncoderRelease};
    api().wgpuComputePassEncoderSetPipeline(pass.get(), pipeline_.get());
    api().wgpuComputePassEncoderSetBindGroup(pass.get(), 0, group.get(), 0, nullptr);
    api().wgpuComputePassEncoderDispatchWorkgroups(pass.get(), groups[0], groups[1], groups[2]);
    api().wgpuComputePassEncoderEnd(pass.get());
    Owned<WGPUCommandBuffer> commands{api().wgpuCommandEncoderFinish(encoder.get(), nullptr), api().wgpuCommandBufferRelease};
    WGPUCommandBuffer raw = commands.get();
    api().wgpuQueueSubmit(c_->queue, 1, &raw);
    c_->throw_uncaptured(detail::cat("kernel '", name_, "'"));
    // A pipeline's first dispatch is waited for: a driver may compile the shader when it first
    // runs (lavapipe does, with libLLVM, on its queue thread), and a compile still going on when
    // the process exits raced the exit's destructors of libLLVM's statics (a double free, or a
    // hang, in about 1 exit in 4 of the linalg tests). Later dispatches run code already compiled.
    const bool first = !std::exchange(dispatched_, true);
    if (!timed && !first) return 0;
    // (the wall clock around the dispatch and its wait: timestamp queries are not used yet)
    c_->wait();
    c_->throw_uncaptured(detail::cat("kernel '", name_, "'"));
    return timed ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() : 0;
  }

 private:
  // The layout and pipeline for `buffers` storage buffers and, when there are `variables`, the
  // uniform array after them, and that array's buffer (under the context's mutex).
  void prepare(size_t buffers, size_t variables) {
    using namespace webgpu_c;
    if (pipeline_) {
      if (buffers != buffers_ || variables != variables_)
        throw DeviceError(detail::cat("tinyt: ", c_->name, ": kernel '", name_, "' launched with ", buffers, " buffers and ", variables,
                                      " variables after ", buffers_, " and ", variables_));
      return;
    }
    std::vector<WGPUBindGroupLayoutEntry> entries(buffers + (variables ? 1 : 0));
    for (size_t i = 0; i < entries.size(); ++i) {
      entries[i].binding = static_cast<uint32_t>(i);
      entries[i].visibility = SHADER_STAGE_COMPUTE;
      entries[i].buffer.type = i < buffers ? BUFFER_BINDING_STORAGE : BUFFER_BINDING_UNIFORM;
    }
    WGPUBindGroupLayoutDescriptor layout_desc;
    layout_desc.entryCount = entries.size();
    layout_desc.entries = entries.data();
    const std::string what = detail::cat("kernel '", name_, "'");
    group_layout_.reset(c_->checked(what, [&] { return api().wgpuDeviceCreateBindGroupLayout(c_->device, &layout_desc); }));
    WGPUBindGroupLayout raw = group_layout_.get();
    WGPUPipelineLayoutDescriptor pipeline_layout_desc;
    pipeline_layout_desc.bindGroupLayoutCount = 1;
    pipeline_layout_desc.bindGroupLayouts = &raw;
    pipeline_layout_.reset(c_->checked(what, [&] { return api().wgpuDeviceCreatePipelineLayout(c_->device, &pipeline_layout_desc); }));
    WGPUComputePipelineDescriptor desc;
    desc.layout = pipeline_layout_.get();
    desc.compute.module = module_.get();
    desc.compute.entryPoint = view(name_);
    pipeline_.reset(c_->checked(what + ": its pipeline", [&] { return api().wgpuDeviceCreateComputePipeline(c_->device, &desc); }));
    if (variables) {
      WGPUBufferDescriptor uniform_desc;
      uniform_desc.usage = USAGE_UNIFORM | USAGE_COPY_DST;
      uniform_desc.size = variables * 4 * sizeof(int32_t);
      uniforms_.reset(c_->checked(what + ": its variables", [&] { return api().wgpuDeviceCreateBuffer(c_->device, &uniform_desc); }));
    }
    buffers_ = buffers, variables_ = variables;
  }

  std::shared_ptr<webgpu_c::Context> c_;  // first: the device outlives what is made on it
  std::string name_;
  webgpu_c::Owned<webgpu_c::WGPUShaderModule> module_;
  webgpu_c::Owned<webgpu_c::WGPUBindGroupLayout> group_layout_{nullptr, webgpu_c::api().wgpuBindGroupLayoutRelease};
  webgpu_c::Owned<webgpu_c::WGPUPipelineLayout> pipeline_layout_{nullptr, webgpu_c::api().wgpuPipelineLayoutRelease};
  webgpu_c::Owned<webgpu_c::WGPUComputePipeline> pipeline_{nullptr, webgpu_c::api().wgpuComputePipelineRelease};
  webgpu_c::Owned<webgpu_c::WGPUBuffer> uniforms_{nullptr, webgpu_c::api().wgpuBufferRelease};  // the variables' array
  size_t buffers_ = 0, variables_ = 0;
  bool dispatched_ = false;  // once, and waited for
};

/// The WebGPU device: the first adapter wgpu-native offers, with the default limits (those a
/// browser gives too), and shader-f16 where the adapter has it.
class WebGPUDevice final : public Device {
 public:
  /// DeviceError when the library cannot be opened (naming each path tried) or offers no adapter.
  explicit WebGPUDevice(int index) {
    using namespace webgpu_c;
    if (index != 0) throw DeviceError(detail::cat("tinyt: no WebGPU device WEBGPU:", index, " (tinyt opens one, WEBGPU)"));
    auto c = std::make_shared<Context>();
    c->name = "WEBGPU";
    c->instance = api().wgpuCreateInstance(nullptr);
    if (!c->instance) throw DeviceError("tinyt: WEBGPU: wgpuCreateInstance gave no instance");
    Requested<WGPUAdapter> adapter;
    api().wgpuInstanceRequestAdapter(c->instance, nullptr, adapter.callback());
    api().wgpuInstanceProcessEvents(c->instance);
    if (!adapter.handle)
      throw DeviceError(detail::cat("tinyt: WEBGPU: no adapter (", adapter.message.empty() ? "none offered" : adapter.message,
                                    "); on a machine without a GPU, Mesa's Vulkan driver (lavapipe, Debian's mesa-vulkan-drivers) is one"));
    Owned<WGPUAdapter> owned_adapter{adapter.handle, api().wgpuAdapterRelease};
    WGPUAdapterInfo info;
    if (api().wgpuAdapterGetInfo(owned_adapter.get(), &info) == STATUS_SUCCESS) {
      c->adapter = detail::cat(str(info.device), " | ", str(info.description));
      api().wgpuAdapterInfoFreeMembers(info);
    }
    c->f16 = api().wgpuAdapterHasFeature(owned_adapter.get(), FEATURE_SHADER_F16) != 0;
    WGPUDeviceDescriptor desc;
    const WGPUEnum f16 = FEATURE_SHADER_F16;
    if (c->f16) desc.requiredFeatureCount = 1, desc.requiredFeatures = &f16;
    // errors outside a scope are kept for the next check, not fatal (wgpu-native's default)
    desc.uncapturedErrorCallbackInfo.callback = [](const WGPUDevice*, WGPUEnum, WGPUStringView message, void* user, void*) {
      auto* context = static_cast<Context*>(user);
      if (context->uncaptured.empty()) context->uncaptured = str(message);
    };
    desc.uncapturedErrorCallbackInfo.userdata1 = c.get();
    Requested<WGPUDevice> device;
    api().wgpuAdapterRequestDevice(owned_adapter.get(), &desc, device.callback());
    api().wgpuInstanceProcessEvents(c->instance);
    if (!device.handle) throw DeviceError(detail::cat("tinyt: WEBGPU: the adapter ", c->adapter, " gave no device: ", device.message));
    c->device = device.handle;
    c->queue = api().wgpuDeviceGetQueue(c->device);
    c_ = std::move(c);
    allocator_ = std::make_unique<WebGPUAllocator>(c_);
    compiler_ = std::make_unique<WebGPUCompiler>(c_);
    target_.language = Language::wgsl;
    target_.gpu = true;
    target_.max_local = 256;  // maxComputeInvocationsPerWorkgroup's default
    target_.wide_types = false;
    target_.max_buffers = 8;  // maxStorageBuffersPerShaderStage's default
    target_.half = c_->f16;
  }
  ~WebGPUDevice() override {
    allocator_.reset();  // its buffers before the device
    if (!c_) return;
    std::lock_guard lock(c_->mutex);
    c_->wait();
  }

  const std::string& name() const override { return c_->name; }
  Allocator& allocator() override { return *allocator_; }
  Compiler& compiler() override { return *compiler_; }
  Target target() const override { return target_; }
  std::unique_ptr<Program> load(const std::string& binary, const std::string& name) override {
    return std::make_unique<WebGPUProgram>(c_, binary, name);
  }
  void synchronize() override {
    std::lock_guard lock(c_->mutex);
    c_->wait();
  }

 private:
  std::shared_ptr<webgpu_c::Context> c_;
  Target target_;
  std::unique_ptr<WebGPUAllocator> allocator_;
  std::unique_ptr<WebGPUCompiler> compiler_;
};

/// The WebGPU device WEBGPU (index 0), for register_device("WEBGPU", open_webgpu).
inline std::unique_ptr<Device> open_webgpu(int index) { return std::make_unique<WebGPUDevice>(index); }

}  // namespace backend
}  // namespace tinyt::inline v0

#undef TINYT_WEBGPU_API
