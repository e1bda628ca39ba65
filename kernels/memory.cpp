#include "kernels/memory.h"

#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/error.h"
#include "kernels/runtime.h"
#include "kernels/stream.h"

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

void copy_bytes(std::string_view what, void* dst, Device dst_device, const void* src,
                Device src_device, size_t bytes, const Stream& stream) {
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return;
  }
  const Device cuda_side = src_device.is_cuda() ? src_device : dst_device;
  if (stream.device() != cuda_side) {
    fail(std::string(what) + ": a copy from " + src_device.str() + " to " + dst_device.str() +
         " needs a stream on " + cuda_side.str() + ", got one on " + stream.device().str());
  }
  if (bytes > 0) cuda_runtime::memcpy_async(dst, src, bytes, stream.native());
}

void zero_bytes(std::string_view what, void* dst, Device device, size_t bytes,
                const Stream& stream) {
  if (device.is_cpu()) {
    if (bytes > 0) std::memset(dst, 0, bytes);
    return;
  }
  if (stream.device() != device) {
    fail(std::string(what) + ": a zero fill on " + device.str() +
         " needs a stream on it, got one on " + stream.device().str());
  }
  if (bytes > 0) cuda_runtime::memset_async(dst, 0, bytes, stream.native());
}

}  // namespace engine
