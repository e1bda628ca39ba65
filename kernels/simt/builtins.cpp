// Definitions of the built-in variables and of the small device functions kernels reach
// through runtime.h.
#include "kernels/simt/builtins.h"

#include <atomic>

#include "kernels/simt/runtime.h"
#include "kernels/simt/sanitizers.h"
#include "kernels/simt/scheduler.h"

// Written by the scheduler on every switch, read by kernels. Under ThreadSanitizer only the
// reads are instrumented (this library is not), so the scheduler's writes never look racy.
extern "C" {
uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;
int warpSize = 32;
}

namespace simt::detail {
namespace {
// __threadfence: every fence releases and acquires this object, so a thread's writes before
// its fence happen before whatever any thread does after a later fence.
std::uint64_t g_fence_sync = 0;
}  // namespace

int sync_block(BlockReduce reduce, int predicate) {
  return Scheduler::instance().block_barrier(reduce, predicate);
}

void sync_warp(WarpRequest& request) {
  Scheduler::instance().warp_collective(request);
}

unsigned lane_id() {
  return Scheduler::instance().self().lane;
}

unsigned warp_alive_mask() {
  Scheduler& s = Scheduler::instance();
  return s.warp_of(s.self()).alive;
}

void** warp_scratch() {
  Scheduler& s = Scheduler::instance();
  return s.warp_of(s.self()).scratch;
}

void* dynamic_shared_memory() {
  return Scheduler::instance().dynamic_smem();
}

void thread_fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  SIMT_TSAN_RELEASE(&g_fence_sync);
  SIMT_TSAN_ACQUIRE(&g_fence_sync);
}

}  // namespace simt::detail
