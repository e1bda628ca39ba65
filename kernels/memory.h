// Where tensor storage comes from: 64-byte aligned host memory for CPU tensors, the
// per-device caching allocator for CUDA tensors, and a caching allocator of pinned host
// memory for H2D staging buffers. Storage is a shared_ptr whose deleter gives it back.
// Also the byte-level copy and zero fill of storage (memcpy / cudaMemcpyAsync, memset /
// cudaMemsetAsync) that the Tensor itself needs, below the ops of kernels/ops.h.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

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

class Stream;

// Copies `bytes` bytes from src (storage on src_device) to dst (on dst_device). Between two
// CPU buffers at once, on the calling thread; otherwise queued on `stream`, which must be on
// the CUDA side (the device of either end). `what` names the caller in the error.
void copy_bytes(std::string_view what, void* dst, Device dst_device, const void* src,
                Device src_device, size_t bytes, const Stream& stream);
// Sets `bytes` bytes at dst (storage on `device`) to zero: on the CPU at once, on a CUDA device
// queued on `stream`, which must be on that device. All-zero bytes are 0 in every dtype (+0.0
// in the float ones), so this is a zero fill for any tensor.
void zero_bytes(std::string_view what, void* dst, Device device, size_t bytes,
                const Stream& stream);

}  // namespace engine
