// simt::launch's library half: validation, shared memory, the loop over blocks, messages.
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

#include "sim/simt/builtins.h"
#include "sim/simt/format.h"
#include "sim/simt/guarded_buffer.h"
#include "sim/simt/runtime.h"
#include "sim/simt/sanitizers.h"
#include "sim/simt/scheduler.h"
#include "sim/simt/self_image.h"

namespace simt::detail {
namespace {

// Concurrent launches from several host threads would share the built-in variables and (in the
// plain build) the static __shared__ variables: they take turns. The turns are invisible to
// ThreadSanitizer: on the sim device two streams' workers launch here, and an ordering by this
// lock, which CUDA does not have, would hide a race between their kernels. What the lock
// guards is never seen by TSan anyway: built-ins and scheduler are written by this
// uninstrumented library, each OS thread has its own scheduler and fibers, and the TSan build
// makes static __shared__ variables thread_local (shared_memory.h).
std::mutex g_launch_mutex;
// Set while this OS thread runs a launch: a kernel calling simt::launch would deadlock.
thread_local bool t_launching = false;

std::string kernel_name(const KernelLaunch& launch) {
  return function_name(reinterpret_cast<const void*>(launch.kernel));
}

void validate(const KernelLaunch& launch) {
  const std::string why = invalid_configuration(launch);
  if (!why.empty())
    throw std::invalid_argument("simt::launch of " + kernel_name(launch) + ": " + why);
}

// Exactly the requested size on the heap, so AddressSanitizer reports accesses past its end.
class DynamicSharedMemory {
 public:
  static constexpr std::align_val_t kAlignment{128};
  explicit DynamicSharedMemory(std::size_t bytes)
      : bytes_(bytes), data_(::operator new(bytes, kAlignment)) {}
  ~DynamicSharedMemory() { ::operator delete(data_, kAlignment); }
  DynamicSharedMemory(const DynamicSharedMemory&) = delete;
  DynamicSharedMemory& operator=(const DynamicSharedMemory&) = delete;

  void* data() const { return data_; }
  void fill_nan() { std::memset(data_, 0xFF, bytes_); }

 private:
  std::size_t bytes_;
  void* data_;
};

class LaunchScope {
 public:
  explicit LaunchScope(Scheduler& scheduler) : scheduler_(scheduler) { t_launching = true; }
  ~LaunchScope() {
    scheduler_.end_launch();
    t_launching = false;
  }
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;

 private:
  Scheduler& scheduler_;
};

}  // namespace

std::string invalid_configuration(const KernelLaunch& launch) {
  const dim3 b = launch.block, g = launch.grid;
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  if (threads == 0 || threads > 1024) {
    return format("block (%u,%u,%u) has %llu threads; CUDA allows 1 to 1024", b.x, b.y, b.z,
                  threads);
  }
  if (b.x > 1024 || b.y > 1024 || b.z > 64) {
    return format("block (%u,%u,%u) exceeds CUDA's limits of (1024,1024,64)", b.x, b.y, b.z);
  }
  if (g.x == 0 || g.y == 0 || g.z == 0) {
    return format("grid (%u,%u,%u) has a zero dimension", g.x, g.y, g.z);
  }
  if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
    return format("grid (%u,%u,%u) exceeds CUDA's limits of (2^31-1,65535,65535)", g.x, g.y, g.z);
  }
  if (launch.dynamic_smem_bytes > kMaxDynamicSharedBytes) {
    return format("%zu bytes of dynamic shared memory exceed the %zu a block can have",
                  launch.dynamic_smem_bytes, kMaxDynamicSharedBytes);
  }
  return "";
}

void run_launch(const KernelLaunch& launch) {
  if (t_launching) {
    throw std::logic_error("simt::launch of " + kernel_name(launch) +
                           " from inside a kernel: dynamic parallelism is not emulated");
  }
  validate(launch);
  const UnorderedLockGuard lock(g_launch_mutex);
  DynamicSharedMemory dynamic_smem(launch.dynamic_smem_bytes);
  const std::vector<MemoryRange>& static_smem = static_shared_ranges();
  Scheduler& scheduler = Scheduler::instance();
  gridDim = launch.grid;
  blockDim = launch.block;
  scheduler.begin_launch(launch, dynamic_smem.data());
  const LaunchScope scope(scheduler);
  const dim3 g = launch.grid;
  for (unsigned z = 0; z < g.z; ++z) {
    for (unsigned y = 0; y < g.y; ++y) {
      for (unsigned x = 0; x < g.x; ++x) {
        blockIdx = uint3{x, y, z};
        for (const MemoryRange& r : static_smem)
          std::memset(r.begin, 0xFF, r.size);
        dynamic_smem.fill_nan();
        const std::string failure = scheduler.run_block();
        if (!failure.empty()) {
          throw std::runtime_error(
              format("simt: kernel %s, block (%u,%u,%u) of grid (%u,%u,%u): %s",
                     kernel_name(launch).c_str(), x, y, z, g.x, g.y, g.z, failure.c_str()));
        }
      }
    }
  }
  // A write past a buffer's end usually stays inside its heap block: only the guards show it.
  const std::string overwritten = guard_violations();
  if (!overwritten.empty()) {
    throw std::runtime_error(
        format("simt: kernel %s, grid (%u,%u,%u), block (%u,%u,%u): a guard zone was overwritten "
               "(by this launch, or by host code since the previous one): %s",
               kernel_name(launch).c_str(), g.x, g.y, g.z, launch.block.x, launch.block.y,
               launch.block.z, overwritten.c_str()));
  }
}

}  // namespace simt::detail
