// Block and warp barriers of the scheduler (see scheduler.h for the model).
#include <array>
#include <bit>
#include <stdexcept>

#include "sim/simt/format.h"
#include "sim/simt/sanitizers.h"
#include "sim/simt/scheduler.h"
#include "sim/simt/warp_collective.h"

namespace simt::detail {

// __syncthreads: complete when every thread that has not returned has arrived.
int Scheduler::block_barrier(BlockReduce reduce, int predicate) {
  Thread& thread = self();
  if (aborting_) throw AbortThread{};
  // Two sync objects by generation parity: a thread that leaves generation g and arrives at
  // g + 1 must not hand its new writes to a thread still leaving g.
  SIMT_TSAN_RELEASE(&barrier_sync_[barrier_generation_ & 1]);
  thread.wait = Wait::kBlockBarrier;
  thread.barrier_generation = barrier_generation_;
  barrier_waiters_.push_back(&thread);
  barrier_true_ += predicate != 0 ? 1 : 0;
  if (barrier_waiters_.size() == alive_) {
    complete_block_barrier();
  } else {
    suspend(thread);
  }
  SIMT_TSAN_ACQUIRE(&barrier_sync_[thread.barrier_generation & 1]);
  // The results stay valid until this thread arrives again: no barrier completes without it.
  switch (reduce) {
    case BlockReduce::kCount:
      return static_cast<int>(barrier_result_true_);
    case BlockReduce::kAnd:
      return barrier_result_true_ == barrier_result_arrived_ ? 1 : 0;
    case BlockReduce::kOr:
      return barrier_result_true_ > 0 ? 1 : 0;
    case BlockReduce::kNone:
      break;
  }
  return 0;
}

void Scheduler::complete_block_barrier() {
  barrier_result_true_ = barrier_true_;
  barrier_result_arrived_ = static_cast<unsigned>(barrier_waiters_.size());
  barrier_true_ = 0;
  ++barrier_generation_;
  for (Thread* waiter : barrier_waiters_) {
    waiter->wait = Wait::kNone;
    if (waiter != current_) push_ready(waiter);
  }
  barrier_waiters_.clear();
}

// Warp collectives: the lanes named in the mask that have not returned form a group; it
// completes when all of them wait with that same mask.
void Scheduler::warp_collective(WarpRequest& request) {
  Thread& thread = self();
  if (aborting_) throw AbortThread{};
  const char* name = warp_op_name(request.op);
  if ((request.mask & (1u << thread.lane)) == 0) {
    throw std::invalid_argument(format("%s: mask 0x%08x does not include the calling lane %u", name,
                                       request.mask, thread.lane));
  }
  if (is_shuffle(request.op) && (request.width < 1 || request.width > 32 ||
                                 !std::has_single_bit(static_cast<unsigned>(request.width)))) {
    throw std::invalid_argument(
        format("%s: width %d is not a power of two from 1 to 32", name, request.width));
  }
  Warp& warp = warps_[thread.warp];
  thread.request = &request;
  thread.wait = Wait::kWarpCollective;
  thread.sync_slot = join_sync_slot(warp, request.mask);
  SIMT_TSAN_RELEASE(&warp.sync_objects[thread.sync_slot]);
  warp.waiting |= 1u << thread.lane;
  std::string error;
  if (!try_complete_warp_group(warp, request.mask, error)) {
    suspend(thread);
  } else if (!error.empty()) {
    throw std::logic_error(error);
  }
  SIMT_TSAN_ACQUIRE(&warp.sync_objects[thread.sync_slot]);
  --warp.sync_users[thread.sync_slot];
}

// The sync object of the group this lane joins: the one of the group gathering with the same
// mask, else a free one.
unsigned Scheduler::join_sync_slot(Warp& warp, unsigned mask) {
  for (unsigned slots = warp.gathering; slots != 0; slots &= slots - 1) {
    const int slot = std::countr_zero(slots);
    if (warp.gathering_mask[slot] == mask) {
      ++warp.sync_users[slot];
      return static_cast<unsigned>(slot);
    }
  }
  unsigned slot = 0;
  while (warp.sync_users[slot] != 0)
    ++slot;  // at most 31 are held by other lanes
  warp.sync_users[slot] = 1;
  warp.gathering |= 1u << slot;
  warp.gathering_mask[slot] = mask;
  return slot;
}

unsigned Scheduler::missing_lanes(const Warp& warp, unsigned mask) const {
  unsigned arrived = 0;
  for (unsigned lanes = warp.waiting & mask; lanes != 0; lanes &= lanes - 1) {
    const int lane = std::countr_zero(lanes);
    if (threads_[warp.first_thread + lane].request->mask == mask) arrived |= 1u << lane;
  }
  return mask & warp.alive & ~arrived;
}

bool Scheduler::try_complete_warp_group(Warp& warp, unsigned mask, std::string& error) {
  const unsigned participants = mask & warp.alive;
  if (participants == 0 || (warp.waiting & participants) != participants ||
      missing_lanes(warp, mask) != 0) {
    return false;
  }
  std::array<WarpRequest*, 32> requests{};
  for (unsigned lanes = participants; lanes != 0; lanes &= lanes - 1) {
    const int lane = std::countr_zero(lanes);
    requests[lane] = threads_[warp.first_thread + lane].request;
  }
  SIMT_TSAN_IGNORE_BEGIN();
  error = complete_warp_collective(requests, participants);
  SIMT_TSAN_IGNORE_END();
  warp.gathering &= ~(1u << threads_[warp.first_thread + std::countr_zero(participants)].sync_slot);
  warp.waiting &= ~participants;
  for (unsigned lanes = participants; lanes != 0; lanes &= lanes - 1) {
    Thread& lane_thread = threads_[warp.first_thread + std::countr_zero(lanes)];
    lane_thread.wait = Wait::kNone;
    lane_thread.request = nullptr;
    if (&lane_thread != current_) push_ready(&lane_thread);
  }
  return true;
}

// A returned lane no longer holds back the groups it was named in.
void Scheduler::complete_warp_groups_after_exit(Warp& warp) {
  for (unsigned lanes = warp.waiting; lanes != 0; lanes &= lanes - 1) {
    const int lane = std::countr_zero(lanes);
    if ((warp.waiting & (1u << lane)) == 0) continue;  // completed by an earlier group
    std::string error;
    const unsigned mask = threads_[warp.first_thread + lane].request->mask;
    if (try_complete_warp_group(warp, mask, error) && !error.empty() && failure_.empty()) {
      failure_ = format("warp %u: %s", static_cast<unsigned>(&warp - warps_.data()), error.c_str());
    }
  }
}

}  // namespace simt::detail
