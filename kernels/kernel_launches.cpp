#include "kernels/kernel_launches.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

namespace engine {

namespace {

// Relaxed: a count, read between steps after the stream has been synchronized.
std::atomic<uint64_t> launches{0};

struct Census {
  std::atomic<bool> running{false};
  std::mutex mutex;
  std::unordered_map<const void*, uint64_t> by_kernel;
};

Census& census() {
  static Census instance;
  return instance;
}

}  // namespace

uint64_t kernel_launches() {
  return launches.load(std::memory_order_relaxed);
}

void count_kernel_launch(const void* kernel) {
  launches.fetch_add(1, std::memory_order_relaxed);
  Census& c = census();
  if (!c.running.load(std::memory_order_relaxed)) return;
  const std::lock_guard<std::mutex> lock(c.mutex);
  ++c.by_kernel[kernel];
}

void start_launch_census() {
  Census& c = census();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.by_kernel.clear();
  c.running.store(true, std::memory_order_relaxed);
}

std::vector<std::pair<const void*, uint64_t>> stop_launch_census() {
  Census& c = census();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.running.store(false, std::memory_order_relaxed);
  std::vector<std::pair<const void*, uint64_t>> counts(c.by_kernel.begin(), c.by_kernel.end());
  c.by_kernel.clear();
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return counts;
}

}  // namespace engine
