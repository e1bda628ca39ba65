// cudaMemGetInfo and cudaPointerGetAttributes of the sim device, from its allocation table:
// what is free of the current device's configured capacity (so out-of-memory paths can be
// driven by ENGINE_SIM_DEVICE_MEMORY_MIB), and what kind of memory a pointer is.
#include <cuda_runtime_api.h>

#include <optional>

#include "sim/cuda/allocations.h"
#include "sim/cuda/devices.h"
#include "sim/cuda/errors.h"

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (free == nullptr || total == nullptr) return result(cudaErrorInvalidValue);
  *total = device_memory_bytes();
  *free = *total - device_bytes_in_use(current_device());
  return cudaSuccess;
}

// As CUDA reports them: device memory is cudaMemoryTypeDevice on its device (no host pointer),
// pinned host memory cudaMemoryTypeHost (mapped: both pointers), and anything else, pageable
// host memory, cudaMemoryTypeUnregistered with neither pointer set.
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (attributes == nullptr) return result(cudaErrorInvalidValue);
  *attributes = cudaPointerAttributes{};
  const std::optional<Allocation> allocation = find_allocation(ptr);
  void* const address = const_cast<void*>(ptr);
  if (!allocation) {
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
  } else if (allocation->kind == MemoryKind::kDevice) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->device = allocation->device;
    attributes->devicePointer = address;
  } else {
    attributes->type = cudaMemoryTypeHost;
    attributes->device = current_device();
    attributes->devicePointer = address;
    attributes->hostPointer = address;
  }
  return cudaSuccess;
}
