#include "kernels/memory.h"

#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/error.h"
#include "kernels/runtime.h"

namespace engine {

namespace {
constexpr std::align_val_t kHostAlignment{64};

void check_cuda_device(int device) {
  const int count = cuda_device_count();
  if (device < 0 || device >= count) {
    fail("cuda:" + std::to_string(device) + " is not available (" + std::to_string(count) +
         " usable CUDA device(s))");
  }
}
}  // namespace

CachingAllocator& device_allocator(int device) {
  static std::mutex mutex;
  static auto* allocators = new std::vector<CachingAllocator*>();
  check_cuda_device(device);
  std::lock_guard lock(mutex);
  if (allocators->size() <= static_cast<size_t>(device)) allocators->resize(device + 1, nullptr);
  CachingAllocator*& allocator = (*allocators)[device];
  if (allocator == nullptr) {
    allocator = new CachingAllocator(
        "cuda:" + std::to_string(device) + " allocator",
        [device](size_t bytes) { return cuda_runtime::device_malloc(bytes, device); },
        [device](void* ptr) { cuda_runtime::device_free(ptr, device); });
  }
  return *allocator;
}

CachingAllocator& pinned_host_allocator() {
  static auto* allocator = new CachingAllocator(
      "pinned host allocator", cuda_runtime::pinned_host_malloc, cuda_runtime::pinned_host_free);
  return *allocator;
}

std::shared_ptr<std::byte> allocate_storage(size_t bytes, Device device, HostMemory host_memory) {
  if (device.is_cuda()) {
    CachingAllocator& allocator = device_allocator(device.index);
    auto* ptr = static_cast<std::byte*>(allocator.allocate(bytes));
    return {ptr, [&allocator](std::byte* p) { allocator.deallocate(p); }};
  }
  if (host_memory == HostMemory::pinned) {
    if (cuda_device_count() == 0) fail("pinned host memory needs a CUDA device");
    CachingAllocator& allocator = pinned_host_allocator();
    auto* ptr = static_cast<std::byte*>(allocator.allocate(bytes));
    return {ptr, [&allocator](std::byte* p) { allocator.deallocate(p); }};
  }
  auto* ptr = static_cast<std::byte*>(::operator new(bytes == 0 ? 1 : bytes, kHostAlignment));
  return {ptr, [](std::byte* p) { ::operator delete(p, kHostAlignment); }};
}

}  // namespace engine
