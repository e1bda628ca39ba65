// cudaMemcpyAsync and cudaMemcpy of the sim device. An async copy runs on the stream's worker
// (cudaMemcpy on the calling thread, below); both ranges are
// checked against the tracked allocations first, so a copy of the wrong kind, or one that runs
// past the end of a device or pinned allocation, fails as libcudart would fail it (or, past an
// end, as the GPU would fault) instead of corrupting host memory.
//
// Pageable host memory (anything not allocated by the sim device) is copied synchronously, as
// CUDA does: the call returns only once the copy has run. Only pinned memory overlaps the host.
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

// What `ptr` must be for `kind`'s side (true: device memory), or nullopt for any memory.
std::optional<bool> side_must_be_device(cudaMemcpyKind kind, bool destination) {
  switch (kind) {
    case cudaMemcpyHostToHost:
      return false;
    case cudaMemcpyHostToDevice:
      return destination;
    case cudaMemcpyDeviceToHost:
      return !destination;
    case cudaMemcpyDeviceToDevice:
      return true;
    default:
      return std::nullopt;  // cudaMemcpyDefault: unified addressing tells
  }
}

// Checks one side of a copy made by `call`. Sets `pageable` when the range is not sim device
// memory at all.
cudaError_t check_side(const char* call, const void* ptr, std::size_t bytes, cudaMemcpyKind kind,
                       bool destination, bool& pageable) {
  const char* side = destination ? "destination" : "source";
  const std::optional<Allocation> allocation = find_allocation(ptr);
  const bool is_device = allocation && allocation->kind == MemoryKind::kDevice;
  pageable = !allocation;
  const std::optional<bool> must_be_device = side_must_be_device(kind, destination);
  if (must_be_device && *must_be_device != is_device) {
    explain(std::string(call) + ": the " + side + " " + range_text(ptr, bytes) + " is " +
            (is_device ? "device" : "host") + " memory, but the copy's kind says otherwise");
    return cudaErrorInvalidValue;
  }
  if (allocation && !ends_inside(*allocation, ptr, bytes, call, std::string("the ") + side + " ")) {
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

bool valid_direction(cudaMemcpyKind kind) {
  return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault;
}

// What both copies check of a copy of count > 0 bytes: the pointers, and both ranges.
cudaError_t check_copy(const char* call, void* dst, const void* src, std::size_t count,
                       cudaMemcpyKind kind, bool& pageable) {
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  bool dst_pageable = false, src_pageable = false;
  if (const cudaError_t status = check_side(call, dst, count, kind, true, dst_pageable)) {
    return status;
  }
  if (const cudaError_t status = check_side(call, src, count, kind, false, src_pageable)) {
    return status;
  }
  pageable = dst_pageable || src_pageable;
  return cudaSuccess;
}

}  // namespace
}  // namespace engine::sim

// On the legacy default stream, which the sim device does not queue on: the copy waits for
// every stream of the current device (as a blocking stream's work is ordered before the legacy
// stream's) and then runs on the calling thread, so it has completed when the call returns.
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (!valid_direction(kind)) return result(cudaErrorInvalidMemcpyDirection);
  if (count == 0) return cudaSuccess;
  bool pageable = false;
  if (const cudaError_t status = check_copy("cudaMemcpy", dst, src, count, kind, pageable)) {
    return result(status);
  }
  if (const cudaError_t status = refuse_unsafe_call("cudaMemcpy")) return result(status);
  synchronize_streams(current_device());
  if (const cudaError_t sticky = sticky_error()) return sticky;
  std::memcpy(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (!valid_direction(kind)) return result(cudaErrorInvalidMemcpyDirection);
  if (count == 0) return cudaSuccess;
  bool pageable = false;
  if (const cudaError_t status = check_copy("cudaMemcpyAsync", dst, src, count, kind, pageable)) {
    return result(status);
  }
  if (pageable) {
    if (const cudaError_t status = refuse_on_capturing_stream(
            stream, "cudaMemcpyAsync to or from pageable host memory (synchronous)")) {
      return result(status);
    }
  }
  if (const cudaError_t status = enqueue(stream, [dst, src, count] {
        if (sticky_error() == cudaSuccess) std::memcpy(dst, src, count);
      })) {
    return status;
  }
  return pageable ? synchronize(stream) : cudaSuccess;
}
