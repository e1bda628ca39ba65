// Where tensor storage comes from: 64-byte aligned host memory for CPU tensors, the
// per-device caching allocator for CUDA tensors, and a caching allocator of pinned host
// memory for H2D staging buffers. Storage is a shared_ptr whose deleter gives it back.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/caching_allocator.h"
#include "kernels/device.h"

namespace engine {

enum class HostMemory { pageable, pinned };

// Owned storage of `bytes` on `device`. HostMemory::pinned applies to CPU storage and needs
// a CUDA device in the process; it throws engine::Error otherwise.
std::shared_ptr<std::byte> allocate_storage(size_t bytes, Device device,
                                            HostMemory host_memory = HostMemory::pageable);

// The process-wide allocators (created on first use, never destroyed: device memory is
// released by process exit, which is safe whatever the order of static destructors).
CachingAllocator& device_allocator(int device);
CachingAllocator& pinned_host_allocator();

}  // namespace engine
