// The block scheduler: runs one block at a time, each CUDA thread a fiber, cooperatively.
//
// A thread runs until it waits in a barrier or returns; then the next ready thread runs (a
// direct fiber-to-fiber switch). The last thread to arrive at a barrier makes the waiting ones
// ready and continues. When no thread is ready the host regains control: either all threads
// returned, one threw, or the rest wait for each other (deadlock). A failed block is unwound:
// every blocked thread resumes into an AbortThread exception, so the fiber stacks end clean.
//
// Memory ordering for ThreadSanitizer: fibers are switched without synchronization; each
// barrier releases on arrival and acquires on departure (block barrier: one sync object per
// generation parity; warp group: one per pending group), so only real barriers order the
// threads of a block. The host releases before each block and acquires after it, which also
// orders consecutive blocks: races between blocks are not detected. (So thread i of every
// block can keep one TSan fiber context: a fresh one per block would order nothing more.)
//
// One launch at a time (launch.cpp serializes them). Each OS thread has its own scheduler, with
// its own fibers and TSan sync objects, so launches from different host threads (the sim
// device's stream workers) are ordered only by what orders those threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/simt/fiber.h"
#include "sim/simt/runtime.h"

namespace simt::detail {

enum class Wait : std::uint8_t { kNone, kBlockBarrier, kWarpCollective };

// A thread's cp.async copies not yet performed (async_copy.cpp): copies[0, group_ends[i]) are
// the committed groups up to i; those after the last end form the open group.
struct AsyncCopyQueue {
  std::vector<AsyncCopy> copies;
  std::vector<std::size_t> group_ends;
  std::vector<AsyncCopy> due;  // what async_copy_due hands out
  void clear() {
    copies.clear();
    group_ends.clear();
    due.clear();
  }
};

struct Thread {
  Fiber fiber;
  uint3 index{};
  unsigned warp = 0, lane = 0;
  bool started = false, exited = false;
  Wait wait = Wait::kNone;
  unsigned barrier_generation = 0;  // the __syncthreads it waits in
  WarpRequest* request = nullptr;   // its warp collective, on its own stack
  unsigned sync_slot = 0;           // its warp group's TSan sync object
  AsyncCopyQueue async_copies;
  char name[64] = {};  // for TSan reports
};

struct Warp {
  unsigned first_thread = 0;
  unsigned alive = 0;    // lanes that exist and have not returned
  unsigned waiting = 0;  // lanes blocked in a warp collective
  void* scratch[32] = {};
  // TSan sync objects: each lane holds at most one (from arrival until it resumes), so 32
  // always suffice; sync_users counts the lanes holding each. A slot in `gathering` belongs
  // to a group still waiting for lanes, with mask gathering_mask[slot].
  std::uint64_t sync_objects[32] = {};
  unsigned sync_users[32] = {};
  unsigned gathering = 0;
  unsigned gathering_mask[32] = {};
};

// Throws std::logic_error when `thread` issued cp.async copies it never waited for: their data
// may land after the thread is gone, so nobody can rely on it (async_copy.cpp).
void require_no_pending_async_copies(const Thread& thread);

// Thrown into blocked threads to unwind them when their block is aborted. Not derived from
// std::exception, so a kernel's catch clauses do not stop it.
struct AbortThread {};

class Scheduler {
 public:
  static Scheduler& instance();

  void begin_launch(const KernelLaunch& launch, void* dynamic_smem);
  // Runs one block to the end: returns "" when every thread returned, else what went wrong.
  std::string run_block();
  void end_launch();

  // For code running on a fiber of the current block.
  Thread& self();
  Warp& warp_of(const Thread& thread) { return warps_[thread.warp]; }
  void* dynamic_smem() { return self(), dynamic_smem_; }
  // Whether [p, p + bytes) lies in the running block's shared memory (static or dynamic).
  bool in_shared_memory(const void* p, std::size_t bytes) const;
  int block_barrier(BlockReduce reduce, int predicate);  // barriers.cpp
  void warp_collective(WarpRequest& request);            // barriers.cpp
  // __threadfence's TSan sync object (builtins.cpp): per scheduler, so a fence orders the
  // threads of the launches of one host thread, not two streams' kernels.
  std::uint64_t* fence_sync() { return &fence_sync_; }

 private:
  Scheduler() = default;
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  static Fiber* thread_main(void* arg);

  void enter(Thread& thread);
  Fiber& next_fiber();
  void suspend(Thread& thread);
  Fiber& retire(Thread& thread);
  void fail(const Thread& thread, const std::string& what);
  void abort_block();
  std::string describe_deadlock() const;
  std::string describe_wait(const Thread& thread) const;
  void push_ready(Thread* thread);
  Thread* pop_ready();

  // barriers.cpp
  void complete_block_barrier();
  unsigned join_sync_slot(Warp& warp, unsigned mask);
  bool try_complete_warp_group(Warp& warp, unsigned mask, std::string& error);
  void complete_warp_groups_after_exit(Warp& warp);
  unsigned missing_lanes(const Warp& warp, unsigned mask) const;

  const KernelLaunch* launch_ = nullptr;
  void* dynamic_smem_ = nullptr;
  StackPool stacks_;
  Fiber host_;
  std::vector<Thread> threads_;
  std::vector<Warp> warps_;
  unsigned thread_count_ = 0;
  unsigned alive_ = 0;
  Thread* current_ = nullptr;
  std::vector<Thread*> ready_;  // ring buffer
  std::size_t ready_head_ = 0, ready_count_ = 0;
  std::string failure_;
  bool aborting_ = false;

  std::vector<Thread*> barrier_waiters_;
  unsigned barrier_generation_ = 0;
  unsigned barrier_true_ = 0;
  unsigned barrier_result_true_ = 0, barrier_result_arrived_ = 0;
  std::uint64_t barrier_sync_[2] = {};
  std::uint64_t block_entry_sync_ = 0, block_exit_sync_ = 0;
  std::uint64_t fence_sync_ = 0;
};

}  // namespace simt::detail
