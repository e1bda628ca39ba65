// The happens-before edges the sim device shows ThreadSanitizer: exactly the ones CUDA promises,
// so that a missing cudaStreamWaitEvent between two streams is a reported data race. In the
// plain build every annotation here compiles to nothing.
//
// Threads: each host thread; each stream's worker (streams.cpp), which runs the stream's tasks
// in order; and the fibers a worker runs a kernel's CUDA threads on (sim/simt/: they see
// what their worker did before the launch, and the worker sees what they did after it, see
// scheduler.h). The edges, each a SyncPoint released on one side and acquired on the other:
//   1. enqueue -> task: a call that queues work (a kernel launch, cudaMemcpyAsync,
//      cudaEventRecord, cudaStreamWaitEvent) releases a point of that task's own; the worker
//      acquires it just before it runs the task. Per task, so what the host does after the
//      call is not ordered before the task (a host write to a buffer that a queued copy still
//      reads is a race, as on a GPU).
//   2. stream order: one worker runs a stream's tasks one after another (program order).
//   3. record -> wait: each cudaEventRecord has its own point, released by its task when the
//      stream reaches it; the task of a cudaStreamWaitEvent on that record acquires it once
//      the record has completed (so the waiting stream's later work is ordered after the
//      recording stream's earlier work), and so do cudaEventSynchronize and a cudaEventQuery
//      that returns cudaSuccess, on the host. Per record: a later record of the same event
//      does not leak into a wait for an earlier one.
//   4. stream -> host: each task, once it has run, releases its stream's `ran` point;
//      cudaStreamSynchronize, a cudaStreamQuery that returns cudaSuccess, cudaDeviceSynchronize,
//      a cudaMemcpyAsync that touches pageable memory (synchronous, as in CUDA),
//      cudaFree/cudaFreeHost (they synchronize the device first), and cudaMemcpy and cudaMemset
//      (the legacy default stream: memcpy.cpp, memset.cpp) acquire it after their wait.
//   5. stream creation: the worker starts after cudaStreamCreate's caller (pthread_create's
//      own edge, left to TSan; implied by edge 1 for the creating thread anyway).
// Nothing else orders anything. The runtime's bookkeeping (stream queues and counters, event
// states, the registries, the allocation table) is guarded by mutexes whose locking, waiting
// and unlocking TSan does not see, and the runtime's accesses to it are not recorded either,
// so unordered threads touching it are neither ordered nor reported (BookkeepingLock). A
// worker destroys each task unobserved (Unobserved): a shared_ptr count dropped there would
// otherwise order the worker with whoever holds the other references (an acq_rel decrement
// is an edge), and a kernel's parameters are moved to the worker so that it frees them.
// cudaStreamDestroy's join of the worker is unobserved too: CUDA's returns without waiting.
// The sticky error is a relaxed atomic. In the emulator (sim/simt/) each OS thread has its
// own scheduler, fibers and sync objects (block entry/exit, barriers, __threadfence), the
// launch lock and the guard-buffer registry's lock are taken with TSan's sync ignored, and
// under TSan static __shared__ variables are thread_local, so two workers' kernels share
// nothing that TSan sees but the memory they are given.
//
// Limits: cudaMemcpy and cudaMemset wait for every stream of the device, as if each were a
// blocking stream: CUDA does not order a cudaStreamNonBlocking stream's work before them (the
// engine calls neither; its streams are its own). A cudaStreamSynchronize while other host
// threads keep queueing on the same stream
// may acquire the effects of tasks queued after the call started (one `ran` point per
// stream); an event re-recorded on a second stream before the first record completes is
// waited for by record count, as before this file, not by stream; host threads that share an
// event handle are ordered with each other through its shared_ptr counts (host to host only:
// workers never touch a count observed).
#pragma once

#include <condition_variable>
#include <mutex>

#include "sim/simt/sanitizers.h"

namespace engine::sim {

// An address TSan synchronizes on: what the releasing thread did before release() happens
// before what the acquiring thread does after acquire(). Not a memory access.
class SyncPoint {
 public:
  void release() { SIMT_TSAN_RELEASE(this); }
  void acquire() const { SIMT_TSAN_ACQUIRE(this); }

 private:
  [[maybe_unused]] char address_ = 0;  // gives each point an address of its own
};

// While alive, the calling thread's memory accesses are not recorded and its synchronization
// orders nothing, for TSan.
class Unobserved {
 public:
  Unobserved() {
    SIMT_TSAN_IGNORE_BEGIN();
    SIMT_TSAN_IGNORE_SYNC_BEGIN();
  }
  ~Unobserved() {
    SIMT_TSAN_IGNORE_SYNC_END();
    SIMT_TSAN_IGNORE_END();
  }
  Unobserved(const Unobserved&) = delete;
  Unobserved& operator=(const Unobserved&) = delete;
};

// Holds a bookkeeping mutex: TSan sees neither the locking (nor a wait's unlock and relock)
// nor the accesses made while it is held, so it neither orders nor reports the threads that
// take it. SyncPoint edges made while it is held still count.
class BookkeepingLock {
 public:
  explicit BookkeepingLock(std::mutex& mutex) : lock_(mutex, std::defer_lock) {
    SIMT_TSAN_IGNORE_BEGIN();
    lock();
  }
  ~BookkeepingLock() {
    if (lock_.owns_lock()) unlock();
    SIMT_TSAN_IGNORE_END();
  }
  BookkeepingLock(const BookkeepingLock&) = delete;
  BookkeepingLock& operator=(const BookkeepingLock&) = delete;

  void lock() {
    SIMT_TSAN_IGNORE_SYNC_BEGIN();
    lock_.lock();
    SIMT_TSAN_IGNORE_SYNC_END();
  }
  void unlock() {
    SIMT_TSAN_IGNORE_SYNC_BEGIN();
    lock_.unlock();
    SIMT_TSAN_IGNORE_SYNC_END();
  }
  template <typename Predicate>
  void wait(std::condition_variable& condition, Predicate ready) {
    SIMT_TSAN_IGNORE_SYNC_BEGIN();
    condition.wait(lock_, ready);
    SIMT_TSAN_IGNORE_SYNC_END();
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace engine::sim
