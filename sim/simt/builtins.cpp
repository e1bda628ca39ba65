// Definitions of the built-in variables and of the small device functions kernels reach
// through runtime.h.
#include "sim/simt/builtins.h"

#include <atomic>

#include "sim/simt/runtime.h"
#include "sim/simt/sanitizers.h"
#include "sim/simt/scheduler.h"

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

// __threadfence: every fence releases and acquires one object of the running launch's host
// thread, so a thread's writes before its fence happen before whatever any thread of the
// launch does after a later fence.
void thread_fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::uint64_t* sync = Scheduler::instance().fence_sync();
  SIMT_TSAN_RELEASE(sync);
  SIMT_TSAN_ACQUIRE(sync);
}

}  // namespace simt::detail
