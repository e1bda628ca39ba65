// The sim device's tracked allocations: device memory (cudaMalloc) and pinned host memory
// (cudaHostAlloc, cudaMallocHost). "Device memory" is host memory here, so only this table
// tells a device pointer from a host one; copies check against it.
#pragma once

#include <cstddef>
#include <optional>

namespace engine::sim {

enum class MemoryKind { kDevice, kPinnedHost };

struct Allocation {
  const std::byte* begin = nullptr;
  std::size_t bytes = 0;
  MemoryKind kind = MemoryKind::kDevice;
  int device = 0;  // for kDevice
};

// The live allocation that contains `ptr` (its end included, for empty ranges), if any.
std::optional<Allocation> find_allocation(const void* ptr);

// Bytes of device memory allocated on `device` now (cudaMemGetInfo's used part).
std::size_t device_bytes_in_use(int device);

}  // namespace engine::sim
