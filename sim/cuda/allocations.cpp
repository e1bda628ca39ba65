// cudaMalloc, cudaFree, cudaMallocAsync, cudaFreeAsync, cudaHostAlloc, cudaMallocHost and
// cudaFreeHost of the sim device.
// Every allocation is tracked: freeing an unknown pointer, freeing twice, or freeing with the
// wrong function returns cudaErrorInvalidValue as libcudart does, and each device holds at most
// device_memory_bytes() at once.
#include "sim/cuda/allocations.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "sim/cuda/capture.h"
#include "sim/cuda/devices.h"
#include "sim/cuda/errors.h"
#include "sim/cuda/happens_before.h"
#include "sim/cuda/streams.h"

namespace engine::sim {
namespace {

// cudaMalloc's alignment guarantee.
constexpr std::align_val_t kAlignment{256};

struct Table {
  std::mutex mutex;
  std::map<const std::byte*, Allocation> by_begin;
  std::vector<std::size_t> device_bytes_in_use;
};

Table& table() {
  static Table instance;
  return instance;
}

std::string pointer_text(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", ptr);
  return text;
}

cudaError_t allocate(void** ptr, std::size_t bytes, MemoryKind kind) {
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (ptr == nullptr) return result(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;  // as libcudart: a null pointer, and success
  Table& t = table();
  const int device = current_device();
  {
    const BookkeepingLock lock(t.mutex);
    if (kind == MemoryKind::kDevice) {
      t.device_bytes_in_use.resize(std::max<std::size_t>(t.device_bytes_in_use.size(), device + 1));
      if (bytes > device_memory_bytes() - t.device_bytes_in_use[device]) {
        return result(cudaErrorMemoryAllocation);
      }
      t.device_bytes_in_use[device] += bytes;
    }
  }
  auto* memory = static_cast<std::byte*>(::operator new(bytes, kAlignment, std::nothrow));
  {
    const BookkeepingLock lock(t.mutex);
    if (memory == nullptr) {
      if (kind == MemoryKind::kDevice) t.device_bytes_in_use[device] -= bytes;
    } else {
      t.by_begin[memory] = Allocation{memory, bytes, kind, device};
    }
  }
  if (memory == nullptr) return result(cudaErrorMemoryAllocation);
  *ptr = memory;
  return cudaSuccess;
}

// The live allocation of `kind` that starts at `ptr`; nullopt (said on stderr, naming `call`)
// for any other pointer.
std::optional<Allocation> allocation_to_free(void* ptr, MemoryKind kind, const char* call) {
  Table& t = table();
  const auto* begin = static_cast<const std::byte*>(ptr);
  std::optional<Allocation> allocation;
  bool other_kind = false;
  {
    const BookkeepingLock lock(t.mutex);
    const auto found = t.by_begin.find(begin);
    other_kind = found != t.by_begin.end() && found->second.kind != kind;
    if (found != t.by_begin.end() && !other_kind) allocation = found->second;
  }
  if (!allocation) {
    explain(std::string(call) + "(" + pointer_text(ptr) + "): " +
            (other_kind ? "the pointer is not of this kind (device memory and pinned host "
                          "memory have their own free functions)"
                        : "not the start of a live allocation (freed already, never allocated, "
                          "or inside one)"));
  }
  return allocation;
}

// Takes the allocation that starts at `begin` out of the table (and its device's count) and
// frees its memory; false when another thread did so first.
bool erase_and_free(const std::byte* begin) {
  Table& t = table();
  bool erased = false;
  {
    const BookkeepingLock lock(t.mutex);
    const auto found = t.by_begin.find(begin);
    if (found != t.by_begin.end()) {
      if (found->second.kind == MemoryKind::kDevice) {
        t.device_bytes_in_use[found->second.device] -= found->second.bytes;
      }
      t.by_begin.erase(found);
      erased = true;
    }
  }
  if (erased) ::operator delete(static_cast<void*>(const_cast<std::byte*>(begin)), kAlignment);
  return erased;
}

cudaError_t release(void* ptr, MemoryKind kind, const char* call) {
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (ptr == nullptr) return cudaSuccess;
  const std::optional<Allocation> allocation = allocation_to_free(ptr, kind, call);
  if (!allocation) return result(cudaErrorInvalidValue);
  // CUDA's frees synchronize first: work still queued may use the memory (on a GPU it finishes
  // before the free returns; here the host memory would otherwise go while a worker reads it).
  // That is also the happens-before edge (happens_before.h) that orders the free after it.
  synchronize_streams(kind == MemoryKind::kDevice ? allocation->device : -1);
  if (!erase_and_free(allocation->begin)) {
    explain(std::string(call) + "(" + pointer_text(ptr) + "): freed by another thread meanwhile");
    return result(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

// cudaFreeAsync: the memory goes once the stream reaches the free, so what is queued before it
// may still use it, and nothing waits on the host.
cudaError_t release_in_stream_order(void* ptr, cudaStream_t stream) {
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (ptr == nullptr) return cudaSuccess;
  const std::optional<Allocation> allocation =
      allocation_to_free(ptr, MemoryKind::kDevice, "cudaFreeAsync");
  if (!allocation) return result(cudaErrorInvalidValue);
  return result(enqueue(stream, [begin = allocation->begin] { erase_and_free(begin); }));
}

// cudaMallocAsync and cudaFreeAsync on a capturing stream would be memory nodes of the graph,
// which the sim device does not emulate (capture.h).
cudaError_t refuse_memory_node(cudaStream_t stream, const char* call) {
  if (!is_capturing(stream)) return cudaSuccess;
  explain(std::string(call) + " on a capturing stream: memory nodes are not emulated");
  return result(cudaErrorNotSupported);
}

}  // namespace

bool ends_inside(const Allocation& allocation, const void* ptr, std::size_t bytes,
                 const std::string& call, const std::string& what) {
  if (static_cast<const std::byte*>(ptr) + bytes <= allocation.begin + allocation.bytes) {
    return true;
  }
  explain(call + ": " + what + range_text(ptr, bytes) + " runs past the end of its allocation " +
          range_text(allocation.begin, allocation.bytes));
  return false;
}

std::string range_text(const void* ptr, std::size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "[%p, +%zu)", ptr, bytes);
  return text;
}

std::size_t device_bytes_in_use(int device) {
  Table& t = table();
  const BookkeepingLock lock(t.mutex);
  return device < static_cast<int>(t.device_bytes_in_use.size()) ? t.device_bytes_in_use[device]
                                                                 : 0;
}

std::optional<Allocation> find_allocation(const void* ptr) {
  const auto* address = static_cast<const std::byte*>(ptr);
  Table& t = table();
  const BookkeepingLock lock(t.mutex);
  auto after = t.by_begin.upper_bound(address);
  if (after == t.by_begin.begin()) return std::nullopt;
  const Allocation& candidate = std::prev(after)->second;
  if (address > candidate.begin + candidate.bytes) return std::nullopt;
  return candidate;
}

}  // namespace engine::sim

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (const cudaError_t status = engine::sim::refuse_unsafe_call("cudaMalloc")) {
    return engine::sim::result(status);
  }
  return engine::sim::allocate(devPtr, size, engine::sim::MemoryKind::kDevice);
}
cudaError_t cudaFree(void* devPtr) {
  if (const cudaError_t status = engine::sim::refuse_unsafe_call("cudaFree")) {
    return engine::sim::result(status);
  }
  return engine::sim::release(devPtr, engine::sim::MemoryKind::kDevice, "cudaFree");
}
cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  (void)flags;  // portable, mapped, write-combined: all the same in host memory
  if (const cudaError_t status = engine::sim::refuse_unsafe_call("cudaHostAlloc")) {
    return engine::sim::result(status);
  }
  return engine::sim::allocate(pHost, size, engine::sim::MemoryKind::kPinnedHost);
}
cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (const cudaError_t status = engine::sim::refuse_unsafe_call("cudaMallocHost")) {
    return engine::sim::result(status);
  }
  return engine::sim::allocate(ptr, size, engine::sim::MemoryKind::kPinnedHost);
}
cudaError_t cudaFreeHost(void* ptr) {
  if (const cudaError_t status = engine::sim::refuse_unsafe_call("cudaFreeHost")) {
    return engine::sim::result(status);
  }
  return engine::sim::release(ptr, engine::sim::MemoryKind::kPinnedHost, "cudaFreeHost");
}
cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  // Usable in stream order from the call on; the sim device has it at once.
  if (const cudaError_t status = engine::sim::refuse_memory_node(hStream, "cudaMallocAsync")) {
    return status;
  }
  return engine::sim::allocate(devPtr, size, engine::sim::MemoryKind::kDevice);
}
cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  if (const cudaError_t status = engine::sim::refuse_memory_node(hStream, "cudaFreeAsync")) {
    return status;
  }
  return engine::sim::release_in_stream_order(devPtr, hStream);
}
