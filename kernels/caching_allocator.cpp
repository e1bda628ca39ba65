#include "kernels/caching_allocator.h"

#include <bit>
#include <cstdio>

#include "kernels/error.h"

namespace engine {

namespace {
constexpr size_t kSmallLimit = size_t{1} << 20;
constexpr size_t kSmallStep = 512;

std::string mebibytes(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}
}  // namespace

CachingAllocator::CachingAllocator(std::string name, AllocateFn allocate, ReleaseFn release)
    : name_(std::move(name)), allocate_(std::move(allocate)), release_(std::move(release)) {}

CachingAllocator::~CachingAllocator() {
  // Blocks still in use belong to live tensors; only the cache is ours to free here.
  try {
    std::lock_guard lock(mutex_);
    release_cached_locked();
  } catch (...) {
    // The runtime may already be shut down at process exit; nothing useful to report.
  }
}

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes <= kSmallLimit) return (bytes + kSmallStep - 1) / kSmallStep * kSmallStep;
  const size_t step = std::bit_floor(bytes) / 4;
  return (bytes + step - 1) / step * step;
}

namespace {
thread_local uint64_t t_calls = 0;
}  // namespace

uint64_t CachingAllocator::calls_on_this_thread() {
  return t_calls;
}

void* CachingAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  ++t_calls;
  const size_t rounded = round_size(bytes);
  std::lock_guard lock(mutex_);
  void* ptr = nullptr;
  if (auto it = cached_.find(rounded); it != cached_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    stats_.bytes_cached -= rounded;
    ++stats_.cache_hits;
  } else {
    try {
      ptr = allocate_(rounded);
    } catch (const OutOfMemoryError&) {
      release_cached_locked();
      try {
        ptr = allocate_(rounded);
      } catch (const OutOfMemoryError& error) {
        throw OutOfMemoryError(std::string(error.what()) + " [" + name_ + ": " +
                               mebibytes(stats_.bytes_in_use) + " in use, peak " +
                               mebibytes(stats_.peak_bytes_in_use) + "]");
      }
    }
    ++stats_.system_allocations;
  }
  in_use_.emplace(ptr, rounded);
  stats_.bytes_in_use += rounded;
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use)
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  ++t_calls;
  std::lock_guard lock(mutex_);
  const auto it = in_use_.find(ptr);
  if (it == in_use_.end()) {
    fail(name_ + ": deallocate of a pointer it did not allocate (double free?)");
  }
  const size_t rounded = it->second;
  in_use_.erase(it);
  stats_.bytes_in_use -= rounded;
  stats_.bytes_cached += rounded;
  cached_[rounded].push_back(ptr);
}

void CachingAllocator::release_cached() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  for (auto& [size, blocks] : cached_) {
    for (void* block : blocks)
      release_(block);
    stats_.bytes_cached -= size * blocks.size();
  }
  cached_.clear();
}

CachingAllocator::Stats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace engine
