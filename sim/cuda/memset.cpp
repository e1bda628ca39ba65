// cudaMemsetAsync and cudaMemset of the sim device. The range must lie inside one device or
// pinned allocation (pageable host memory, or a range past an allocation's end, is
// cudaErrorInvalidValue, where a GPU would fault), so a bad memset fails instead of writing
// over host memory. The async form runs on the stream's worker in stream order; cudaMemset,
// on the legacy default stream, which the sim device does not queue on, waits for every stream
// of the current device and then runs on the calling thread, as cudaMemcpy does (memcpy.cpp).
#include <cuda_runtime_api.h>

#include <cstring>
#include <optional>
#include <string>

#include "sim/cuda/allocations.h"
#include "sim/cuda/capture.h"
#include "sim/cuda/devices.h"
#include "sim/cuda/errors.h"
#include "sim/cuda/streams.h"

namespace engine::sim {
namespace {

cudaError_t check_range(const char* call, const void* ptr, std::size_t count) {
  if (ptr == nullptr) return cudaErrorInvalidValue;
  const std::optional<Allocation> allocation = find_allocation(ptr);
  if (!allocation) {
    explain(std::string(call) + ": " + range_text(ptr, count) +
            " is not device or pinned host memory");
    return cudaErrorInvalidValue;
  }
  return ends_inside(*allocation, ptr, count, call, "") ? cudaSuccess : cudaErrorInvalidValue;
}

}  // namespace
}  // namespace engine::sim

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (count == 0) return cudaSuccess;
  if (const cudaError_t status = check_range("cudaMemsetAsync", devPtr, count)) {
    return result(status);
  }
  return result(enqueue(stream, [devPtr, value, count] {
    if (sticky_error() == cudaSuccess) std::memset(devPtr, value, count);
  }));
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (count == 0) return cudaSuccess;
  if (const cudaError_t status = check_range("cudaMemset", devPtr, count)) return result(status);
  if (const cudaError_t status = refuse_unsafe_call("cudaMemset")) return result(status);
  synchronize_streams(current_device());
  if (const cudaError_t sticky = sticky_error()) return sticky;
  std::memset(devPtr, value, count);
  return cudaSuccess;
}
