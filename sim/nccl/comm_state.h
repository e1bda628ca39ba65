// One rank's communicator in the sim device's NCCL shim: its place in the job, the shared
// segment holding a byte ring per ordered pair of ranks, and what ncclCommAbort and the
// asynchronous errors need. Tasks queued on streams hold it by shared_ptr, so an aborted or
// destroyed communicator stays valid until its last queued task has run.
#pragma once

#include <nccl.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "collectives/core/shared_memory.h"
#include "sim/nccl/byte_ring.h"

namespace engine::sim_nccl {

// Bytes in flight between two ranks before the sender waits: big enough that the engine's
// small messages never wait, small enough for a segment of nranks^2 rings.
constexpr size_t kRingBytes = size_t{256} << 10;

// What every error of a call needs to say ("ncclSend on rank 1 of 3").
struct CallSite {
  const char* call;
  int rank;
  int nranks;
};

class CommState {
 public:
  // Joins the communicator behind `segment_name` as `rank` of `nranks` (ncclCommInitRank):
  // opens or creates the segment, checks that every rank agrees on nranks, waits until all
  // ranks have arrived (ncclSystemError after `join_timeout_s`), then removes the segment's
  // name so that nothing is left behind even if a process dies later. On failure returns
  // nullptr with `status` and `why` set.
  static std::shared_ptr<CommState> join(const std::string& segment_name, int nranks, int rank,
                                         int device, double join_timeout_s, ncclResult_t& status,
                                         std::string& why);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int device() const { return device_; }
  CallSite site(const char* call) const { return {call, rank_, nranks_}; }

  // The ring that carries bytes from `from` to `to` (from == to: a rank's sends to itself).
  ByteRing ring(int from, int to) const;
  // The process of `rank`, as it recorded itself when it joined.
  pid_t pid_of(int rank) const;

  // Issue order: every task of this communicator, whatever its stream, runs in the order the
  // host issued it, so a pair's ring always has one writer and one reader, in call order.
  // issue() runs `enqueue(ticket)` under the issue lock and consumes the ticket only if it
  // succeeds; a task waits for its turn, then ends it.
  template <typename Enqueue>
  bool issue(Enqueue&& enqueue) {
    const std::lock_guard lock(issue_mutex_);
    if (!enqueue(issued_)) return false;
    ++issued_;
    return true;
  }
  // Waits until every earlier task has finished; false when the communicator was aborted.
  bool wait_for_turn(uint64_t ticket) const;
  void end_turn(uint64_t ticket);
  // Waits until every issued task has finished (ncclCommDestroy).
  void drain() const;

  // ncclCommAbort: running tasks give up within a pause of their progress loop, queued ones do
  // nothing; returns once no task is inside a progress loop.
  void abort();
  bool aborted() const { return aborted_.load(); }
  // Counts a task inside its progress loop, so abort() can wait for it to leave.
  void enter_task() { running_.fetch_add(1); }
  void leave_task() { running_.fetch_sub(1); }

  // The first asynchronous error wins (ncclCommGetAsyncError); its text goes to
  // ncclGetLastError(comm).
  void set_async_error(ncclResult_t status, const std::string& why);
  ncclResult_t async_error() const;
  std::string async_message() const;

 private:
  CommState(SharedMemory segment, int rank, int nranks, int device);

  SharedMemory segment_;
  int rank_;
  int nranks_;
  int device_;
  mutable std::mutex issue_mutex_;
  uint64_t issued_ = 0;
  std::atomic<uint64_t> completed_{0};
  std::atomic<bool> aborted_{false};
  std::atomic<int> running_{0};
  mutable std::mutex error_mutex_;
  ncclResult_t async_error_ = ncclSuccess;
  std::string async_message_;
};

}  // namespace engine::sim_nccl
