// cudaGetDeviceProperties and cudaDeviceGetAttribute of the sim device: an H100's figures
// (compute capability 9.0, 132 SMs, warps of 32, its shared memory and register limits), so
// code that sizes grids or shared memory from them makes the choices it makes on that GPU,
// with the capacity each device is configured to hold (ENGINE_SIM_DEVICE_MEMORY_MIB) as its
// global memory. The shared-memory limits per block are the ones launches are held to: the
// 48 KiB a kernel gets without opting in (launch.h) and sm_90's opt-in limit, which the
// emulator enforces (sim/simt/runtime.h).
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "sim/cuda/devices.h"
#include "sim/cuda/errors.h"
#include "sim/cuda/launch.h"
#include "sim/simt/runtime.h"

namespace engine::sim {
namespace {

constexpr int kMultiprocessors = 132;
constexpr int kWarpSize = 32;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kMaxThreadsPerMultiprocessor = 2048;
constexpr int kMaxBlocksPerMultiprocessor = 32;
constexpr int kRegisters = 65536;  // per block and per multiprocessor
constexpr std::size_t kSharedPerBlock = kDefaultDynamicSharedBytes;
constexpr std::size_t kSharedPerBlockOptin = simt::detail::kMaxDynamicSharedBytes;
constexpr std::size_t kSharedPerMultiprocessor = 228 * 1024;
constexpr int kL2Bytes = 50 * 1024 * 1024;
constexpr int kMemoryBusBits = 5120;

cudaDeviceProp properties(int device) {
  cudaDeviceProp p;
  std::memset(&p, 0, sizeof p);
  std::strncpy(p.name, "engine sim device (H100 figures, SIMT emulator)", sizeof p.name - 1);
  // The machine's device, as a real UUID is: two processes seeing one GPU agree on it.
  p.uuid.bytes[0] = static_cast<char>(machine_device(device));
  p.uuid.bytes[15] = 0x5e;
  p.totalGlobalMem = device_memory_bytes();
  p.sharedMemPerBlock = kSharedPerBlock;
  p.sharedMemPerBlockOptin = kSharedPerBlockOptin;
  p.sharedMemPerMultiprocessor = kSharedPerMultiprocessor;
  p.reservedSharedMemPerBlock = 1024;
  p.regsPerBlock = kRegisters;
  p.regsPerMultiprocessor = kRegisters;
  p.warpSize = kWarpSize;
  p.memPitch = 2147483647;
  p.maxThreadsPerBlock = kMaxThreadsPerBlock;
  p.maxThreadsDim[0] = 1024;
  p.maxThreadsDim[1] = 1024;
  p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647;
  p.maxGridSize[1] = 65535;
  p.maxGridSize[2] = 65535;
  p.totalConstMem = 64 * 1024;
  p.major = 9;
  p.minor = 0;
  p.multiProcessorCount = kMultiprocessors;
  p.maxThreadsPerMultiProcessor = kMaxThreadsPerMultiprocessor;
  p.maxBlocksPerMultiProcessor = kMaxBlocksPerMultiprocessor;
  p.l2CacheSize = kL2Bytes;
  p.memoryBusWidth = kMemoryBusBits;
  p.concurrentKernels = 1;
  p.asyncEngineCount = 2;
  p.unifiedAddressing = 1;
  p.canMapHostMemory = 1;
  p.globalL1CacheSupported = 1;
  p.localL1CacheSupported = 1;
  p.streamPrioritiesSupported = 1;
  p.memoryPoolsSupported = 1;
  p.pciBusID = device;
  return p;
}

bool valid_device(int device) {
  return device >= 0 && device < device_count();
}

}  // namespace
}  // namespace engine::sim

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (prop == nullptr) return result(cudaErrorInvalidValue);
  if (!valid_device(device)) return result(cudaErrorInvalidDevice);
  *prop = properties(device);
  return cudaSuccess;
}

// The sim device implements the runtime of the toolkit it is built with; it has no driver, so
// it names that version for the driver too.
cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return engine::sim::result(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return engine::sim::result(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

// The attributes with a field in cudaDeviceProp; any other is cudaErrorInvalidValue (said on
// stderr), rather than a made-up figure.
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (value == nullptr) return result(cudaErrorInvalidValue);
  if (!valid_device(device)) return result(cudaErrorInvalidDevice);
  const cudaDeviceProp p = properties(device);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      *value = p.maxThreadsPerBlock;
      break;
    case cudaDevAttrMaxBlockDimX:
    case cudaDevAttrMaxBlockDimY:
    case cudaDevAttrMaxBlockDimZ:
      *value = p.maxThreadsDim[attr - cudaDevAttrMaxBlockDimX];
      break;
    case cudaDevAttrMaxGridDimX:
    case cudaDevAttrMaxGridDimY:
    case cudaDevAttrMaxGridDimZ:
      *value = p.maxGridSize[attr - cudaDevAttrMaxGridDimX];
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = static_cast<int>(p.sharedMemPerBlock);
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(p.sharedMemPerBlockOptin);
      break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *value = static_cast<int>(p.sharedMemPerMultiprocessor);
      break;
    case cudaDevAttrWarpSize:
      *value = p.warpSize;
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = p.multiProcessorCount;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = p.major;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = p.minor;
      break;
    case cudaDevAttrMaxRegistersPerBlock:
      *value = p.regsPerBlock;
      break;
    case cudaDevAttrMaxRegistersPerMultiprocessor:
      *value = p.regsPerMultiprocessor;
      break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *value = p.maxThreadsPerMultiProcessor;
      break;
    case cudaDevAttrMaxBlocksPerMultiprocessor:
      *value = p.maxBlocksPerMultiProcessor;
      break;
    case cudaDevAttrL2CacheSize:
      *value = p.l2CacheSize;
      break;
    case cudaDevAttrUnifiedAddressing:
      *value = p.unifiedAddressing;
      break;
    default:
      explain("cudaDeviceGetAttribute: attribute " + std::to_string(static_cast<int>(attr)) +
              " is not one the sim device reports");
      return result(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}
