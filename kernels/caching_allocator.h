// A caching allocator: freed blocks go back to a cache keyed by their rounded size and are
// handed out again, so the training step never calls cudaMalloc/cudaFree (which synchronize
// the device). Used for device memory (one per GPU) and pinned host staging buffers.
//
// Blocks are reused without stream bookkeeping: a block freed after work queued on stream S
// may be handed to new work on S only. Callers that hand a buffer to another stream keep the
// tensor alive until that stream is done (as with PyTorch's record_stream).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace engine {

class CachingAllocator {
 public:
  // allocate(bytes) returns memory or throws (engine::OutOfMemoryError when out of memory);
  // release(ptr) gives it back to the system.
  using AllocateFn = std::function<void*(size_t)>;
  using ReleaseFn = std::function<void(void*)>;

  struct Stats {
    size_t bytes_in_use = 0;  // handed out and not yet deallocated
    size_t bytes_cached = 0;  // held in the cache, ready for reuse
    size_t peak_bytes_in_use = 0;
    uint64_t system_allocations = 0;  // calls to allocate
    uint64_t cache_hits = 0;
  };

  CachingAllocator(std::string name, AllocateFn allocate, ReleaseFn release);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // nullptr for 0 bytes. On OutOfMemoryError the cache is released and the call retried once;
  // the second failure is rethrown with the allocator's usage appended.
  void* allocate(size_t bytes);
  // ptr must come from allocate() of this allocator; nullptr is ignored.
  void deallocate(void* ptr);
  // Gives every cached block back to the system.
  void release_cached();
  Stats stats() const;

  // The size a request is served with: multiples of 512 bytes up to 1 MiB, then steps of a
  // quarter of the largest power of two below the size (at most 25% slack), so repeated
  // training steps hit the same bins.
  static size_t round_size(size_t bytes);

  // allocate() and deallocate() calls (of any allocator) made by the calling thread so far:
  // CUDA graph capture (kernels/cuda_graph.h) compares it before and after, so that other
  // threads (the data loader's) may allocate meanwhile.
  static uint64_t calls_on_this_thread();

 private:
  void release_cached_locked();

  std::string name_;
  AllocateFn allocate_;
  ReleaseFn release_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> cached_;  // rounded size -> free blocks
  std::unordered_map<void*, size_t> in_use_;     // block -> rounded size
  Stats stats_;
};

}  // namespace engine
