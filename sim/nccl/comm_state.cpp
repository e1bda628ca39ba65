#include "sim/nccl/comm_state.h"

#include <unistd.h>

#include <chrono>
#include <utility>

#include "collectives/core/timeout.h"
#include "kernels/error.h"

namespace engine::sim_nccl {
namespace {

constexpr uint64_t kMagic = 0x6e63636c2d73696dULL;  // "nccl-sim"
constexpr size_t kPage = 4096;

size_t round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// The segment: this header, a slot per rank, then nranks^2 rings, each on its own pages.
struct alignas(ByteRing::kLine) SegmentHeader {
  std::atomic<uint64_t> magic;
  std::atomic<int32_t> nranks;
  std::atomic<int32_t> arrived;
};
struct RankSlot {
  std::atomic<int32_t> joined;
  std::atomic<int32_t> pid;
};

size_t rings_offset(int nranks) {
  return round_up(sizeof(SegmentHeader) + static_cast<size_t>(nranks) * sizeof(RankSlot), kPage);
}
size_t ring_stride() {
  return round_up(ByteRing::footprint(kRingBytes), kPage);
}
size_t segment_bytes(int nranks) {
  return rings_offset(nranks) + static_cast<size_t>(nranks) * nranks * ring_stride();
}
SegmentHeader& header(const SharedMemory& segment) {
  return *static_cast<SegmentHeader*>(segment.data());
}
RankSlot& slot(const SharedMemory& segment, int rank) {
  return reinterpret_cast<RankSlot*>(static_cast<std::byte*>(segment.data()) +
                                     sizeof(SegmentHeader))[rank];
}

std::string where(int rank, int nranks) {
  return "ncclCommInitRank on rank " + std::to_string(rank) + " of " + std::to_string(nranks);
}

}  // namespace

CommState::CommState(SharedMemory segment, int rank, int nranks, int device)
    : segment_(std::move(segment)), rank_(rank), nranks_(nranks), device_(device) {}

std::shared_ptr<CommState> CommState::join(const std::string& segment_name, int nranks, int rank,
                                           int device, double join_timeout_s, ncclResult_t& status,
                                           std::string& why) {
  SharedMemory segment;
  try {
    segment = SharedMemory::open_or_create(segment_name, segment_bytes(nranks));
  } catch (const Error& e) {
    // The size is a function of nranks, so another size means another nranks.
    status = ncclInvalidUsage;
    why = where(rank, nranks) + ": the ranks disagree on nranks (" + e.what() + ")";
    return nullptr;
  }
  SegmentHeader& head = header(segment);
  uint64_t no_magic = 0;
  head.magic.compare_exchange_strong(no_magic, kMagic, std::memory_order_acq_rel);
  int32_t unset = 0;
  if (!head.nranks.compare_exchange_strong(unset, nranks, std::memory_order_acq_rel) &&
      unset != nranks) {
    status = ncclInvalidUsage;
    why = where(rank, nranks) + ": another rank joined the same unique id with nranks " +
          std::to_string(unset);
    return nullptr;
  }
  RankSlot& mine = slot(segment, rank);
  if (mine.joined.exchange(1, std::memory_order_acq_rel) != 0) {
    status = ncclInvalidUsage;
    why = where(rank, nranks) + ": rank " + std::to_string(rank) +
          " has already joined this unique id";
    return nullptr;
  }
  mine.pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
  head.arrived.fetch_add(1, std::memory_order_acq_rel);

  const Deadline deadline(std::chrono::milliseconds(static_cast<int64_t>(join_timeout_s * 1e3)));
  Backoff backoff(0);
  while (head.arrived.load(std::memory_order_acquire) < nranks) {
    if (deadline.expired()) {
      SharedMemory::unlink(segment_name);
      status = ncclSystemError;
      why = where(rank, nranks) + ": only " + std::to_string(head.arrived.load()) + " of " +
            std::to_string(nranks) + " ranks joined within " + std::to_string(join_timeout_s) +
            " s (ENGINE_SIM_NCCL_INIT_TIMEOUT_S)";
      return nullptr;
    }
    backoff.pause();
  }
  // Every rank has mapped the segment: the name is no longer needed, and removing it now
  // (idempotent, any rank) means no crash later can leave it in /dev/shm.
  SharedMemory::unlink(segment_name);
  status = ncclSuccess;
  return std::shared_ptr<CommState>(new CommState(std::move(segment), rank, nranks, device));
}

ByteRing CommState::ring(int from, int to) const {
  std::byte* base = static_cast<std::byte*>(segment_.data()) + rings_offset(nranks_) +
                    static_cast<size_t>(from * nranks_ + to) * ring_stride();
  return ByteRing(base, kRingBytes);
}

pid_t CommState::pid_of(int rank) const {
  return static_cast<pid_t>(slot(segment_, rank).pid.load(std::memory_order_relaxed));
}

bool CommState::wait_for_turn(uint64_t ticket) const {
  Backoff backoff(0);
  while (completed_.load(std::memory_order_acquire) != ticket) {
    if (aborted()) return false;
    backoff.pause();
  }
  return !aborted();
}

void CommState::end_turn(uint64_t ticket) {
  completed_.store(ticket + 1, std::memory_order_release);
}

void CommState::drain() const {
  uint64_t target = 0;
  {
    const std::lock_guard lock(issue_mutex_);
    target = issued_;
  }
  Backoff backoff(0);
  while (completed_.load(std::memory_order_acquire) < target)
    backoff.pause();
}

void CommState::abort() {
  aborted_.store(true);  // seq_cst with enter_task: a task either sees the flag or is waited for
  Backoff backoff(0);
  while (running_.load() != 0)
    backoff.pause();
}

void CommState::set_async_error(ncclResult_t status, const std::string& why) {
  const std::lock_guard lock(error_mutex_);
  if (async_error_ != ncclSuccess) return;
  async_error_ = status;
  async_message_ = why;
}

ncclResult_t CommState::async_error() const {
  const std::lock_guard lock(error_mutex_);
  return async_error_;
}

std::string CommState::async_message() const {
  const std::lock_guard lock(error_mutex_);
  return async_message_;
}

}  // namespace engine::sim_nccl
