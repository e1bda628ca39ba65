// The sim device's tracked allocations: device memory (cudaMalloc) and pinned host memory
// (cudaHostAlloc, cudaMallocHost). "Device memory" is host memory here, so only this table
// tells a device pointer from a host one; copies check against it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

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

// Whether [ptr, ptr + bytes) ends inside `allocation` (which holds ptr). When it does not, says
// on stderr that `call`'s `what` (e.g. "the destination ") runs past the allocation's end:
// the copies and memsets refuse such a range, where a GPU would fault.
bool ends_inside(const Allocation& allocation, const void* ptr, std::size_t bytes,
                 const std::string& call, const std::string& what);

// "[ptr, +bytes)", for messages.
std::string range_text(const void* ptr, std::size_t bytes);

// Bytes of device memory allocated on `device` now (cudaMemGetInfo's used part).
std::size_t device_bytes_in_use(int device);

}  // namespace engine::sim
