// The structs and constants tinyt declares for wgpu-native (backend/webgpu.hpp) against the real
// webgpu.h of the pinned wheel: a compile-only check (`webgpu_abi`, -fsyntax-only), so a layout
// that drifts is a failed test, not memory corrupted at run time.
#include <cstddef>

#include <tinyt/backend/webgpu.hpp>

#include "webgpu.h"
#include "wgpu.h"

namespace ours = tinyt::backend::webgpu_c;

#define SAME_LAYOUT(T) static_assert(sizeof(ours::T) == sizeof(::T) && alignof(ours::T) == alignof(::T), #T)
#define SAME_FIELD(T, f) static_assert(offsetof(ours::T, f) == offsetof(::T, f), #T "." #f)

SAME_LAYOUT(WGPUStringView);
SAME_LAYOUT(WGPUChainedStruct);
SAME_LAYOUT(WGPUFuture);
SAME_LAYOUT(WGPUUncapturedErrorCallbackInfo);
SAME_LAYOUT(WGPUAdapterInfo);
SAME_FIELD(WGPUAdapterInfo, description);
SAME_FIELD(WGPUAdapterInfo, subgroupMaxSize);
SAME_LAYOUT(WGPUQueueDescriptor);
SAME_LAYOUT(WGPUDeviceDescriptor);
SAME_FIELD(WGPUDeviceDescriptor, requiredFeatures);
SAME_FIELD(WGPUDeviceDescriptor, requiredLimits);
SAME_FIELD(WGPUDeviceDescriptor, deviceLostCallbackInfo);
SAME_FIELD(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo);
SAME_LAYOUT(WGPUBufferDescriptor);
SAME_FIELD(WGPUBufferDescriptor, usage);
SAME_FIELD(WGPUBufferDescriptor, size);
SAME_LAYOUT(WGPUShaderSourceWGSL);
SAME_FIELD(WGPUShaderSourceWGSL, code);
SAME_LAYOUT(WGPUShaderModuleDescriptor);
SAME_LAYOUT(WGPUBufferBindingLayout);
SAME_LAYOUT(WGPUSamplerBindingLayout);
SAME_LAYOUT(WGPUTextureBindingLayout);
SAME_LAYOUT(WGPUStorageTextureBindingLayout);
SAME_LAYOUT(WGPUBindGroupLayoutEntry);
SAME_FIELD(WGPUBindGroupLayoutEntry, visibility);
SAME_FIELD(WGPUBindGroupLayoutEntry, buffer);
SAME_FIELD(WGPUBindGroupLayoutEntry, storageTexture);
SAME_LAYOUT(WGPUBindGroupLayoutDescriptor);
SAME_LAYOUT(WGPUPipelineLayoutDescriptor);
SAME_FIELD(WGPUPipelineLayoutDescriptor, immediateSize);
SAME_LAYOUT(WGPUComputeState);
SAME_FIELD(WGPUComputeState, entryPoint);
SAME_LAYOUT(WGPUComputePipelineDescriptor);
SAME_FIELD(WGPUComputePipelineDescriptor, compute);
SAME_LAYOUT(WGPUBindGroupEntry);
SAME_FIELD(WGPUBindGroupEntry, size);
SAME_FIELD(WGPUBindGroupEntry, textureView);
SAME_LAYOUT(WGPUBindGroupDescriptor);
// the callback infos share one template: each of the header's has its layout
static_assert(sizeof(ours::CallbackInfo<ours::RequestAdapterCallback>) == sizeof(WGPURequestAdapterCallbackInfo));
static_assert(sizeof(ours::CallbackInfo<ours::RequestDeviceCallback>) == sizeof(WGPURequestDeviceCallbackInfo));
static_assert(sizeof(ours::CallbackInfo<ours::BufferMapCallback>) == sizeof(WGPUBufferMapCallbackInfo));
static_assert(sizeof(ours::CallbackInfo<ours::PopErrorScopeCallback>) == sizeof(WGPUPopErrorScopeCallbackInfo));
static_assert(sizeof(ours::CallbackInfo<ours::DeviceLostCallback>) == sizeof(WGPUDeviceLostCallbackInfo));
static_assert(offsetof(ours::CallbackInfo<ours::BufferMapCallback>, userdata1) == offsetof(WGPUBufferMapCallbackInfo, userdata1));
// every enum is 32 bits, as WGPUEnum
static_assert(sizeof(WGPUErrorType) == sizeof(ours::WGPUEnum) && sizeof(WGPUFeatureName) == sizeof(ours::WGPUEnum));

static_assert(ours::STYPE_SHADER_SOURCE_WGSL == WGPUSType_ShaderSourceWGSL);
static_assert(ours::CALLBACK_MODE_ALLOW_PROCESS_EVENTS == WGPUCallbackMode_AllowProcessEvents);
static_assert(ours::STATUS_SUCCESS == WGPUStatus_Success && ours::STATUS_SUCCESS == WGPURequestAdapterStatus_Success &&
              ours::STATUS_SUCCESS == WGPURequestDeviceStatus_Success && ours::STATUS_SUCCESS == WGPUMapAsyncStatus_Success &&
              ours::STATUS_SUCCESS == WGPUPopErrorScopeStatus_Success);
static_assert(ours::ERROR_FILTER_VALIDATION == WGPUErrorFilter_Validation && ours::ERROR_FILTER_OUT_OF_MEMORY == WGPUErrorFilter_OutOfMemory);
static_assert(ours::ERROR_TYPE_NO_ERROR == WGPUErrorType_NoError);
static_assert(ours::BUFFER_BINDING_UNIFORM == WGPUBufferBindingType_Uniform && ours::BUFFER_BINDING_STORAGE == WGPUBufferBindingType_Storage);
static_assert(ours::FEATURE_SHADER_F16 == WGPUFeatureName_ShaderF16);
static_assert(ours::USAGE_MAP_READ == WGPUBufferUsage_MapRead && ours::USAGE_COPY_SRC == WGPUBufferUsage_CopySrc &&
              ours::USAGE_COPY_DST == WGPUBufferUsage_CopyDst && ours::USAGE_UNIFORM == WGPUBufferUsage_Uniform &&
              ours::USAGE_STORAGE == WGPUBufferUsage_Storage);
static_assert(ours::MAP_MODE_READ == WGPUMapMode_Read && ours::SHADER_STAGE_COMPUTE == WGPUShaderStage_Compute);

int main() {}
