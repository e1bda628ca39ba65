#include "sim/simt/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>

#include "sim/simt/builtins.h"
#include "sim/simt/format.h"
#include "sim/simt/sanitizers.h"
#include "sim/simt/warp_collective.h"

namespace simt::detail {

// One per OS thread: the fibers' TSan contexts carry their own history, so fibers shared by
// two host threads (two sim-device streams) would order one's kernels before the other's.
Scheduler& Scheduler::instance() {
  thread_local Scheduler scheduler;
  return scheduler;
}

Scheduler::~Scheduler() {
#if SIMT_HAS_TSAN
  for (Thread& t : threads_)
    if (t.fiber.tsan_fiber != nullptr) __tsan_destroy_fiber(t.fiber.tsan_fiber);
#endif
}

void Scheduler::begin_launch(const KernelLaunch& launch, void* dynamic_smem) {
  launch_ = &launch;
  dynamic_smem_ = dynamic_smem;
  const dim3 block = launch.block;
  thread_count_ = block.x * block.y * block.z;
  if (threads_.size() < thread_count_) threads_.resize(thread_count_);
  warps_.assign((thread_count_ + 31) / 32, Warp{});
  ready_.assign(thread_count_, nullptr);
  barrier_waiters_.reserve(thread_count_);
  for (unsigned i = 0; i < thread_count_; ++i) {
    Thread& t = threads_[i];
    t.index = uint3{i % block.x, i / block.x % block.y, i / (block.x * block.y)};
    t.warp = i / 32;
    t.lane = i % 32;
    stacks_.assign(i, t.fiber);
  }
  for (unsigned w = 0; w < warps_.size(); ++w)
    warps_[w].first_thread = w * 32;
  fiber_adopt_thread(host_);
}

void Scheduler::end_launch() {
  launch_ = nullptr;
  dynamic_smem_ = nullptr;
  current_ = nullptr;
}

std::string Scheduler::run_block() {
  failure_.clear();
  alive_ = thread_count_;
  ready_head_ = ready_count_ = 0;
  barrier_waiters_.clear();
  barrier_true_ = 0;
  for (Warp& w : warps_) {
    const unsigned lanes = std::min(32u, thread_count_ - w.first_thread);
    w.alive = lanes == 32 ? ~0u : (1u << lanes) - 1;
    w.waiting = 0;
    w.gathering = 0;  // an aborted block may leave groups behind
    for (unsigned& users : w.sync_users)
      users = 0;
  }
  for (unsigned i = 0; i < thread_count_; ++i) {
    Thread& t = threads_[i];
    t.started = t.exited = false;
    t.wait = Wait::kNone;
    t.request = nullptr;
    t.async_copies.clear();  // an aborted block may leave copies behind
#if SIMT_HAS_TSAN
    std::snprintf(t.name, sizeof t.name, "simt block (%u,%u,%u) thread (%u,%u,%u)", blockIdx.x,
                  blockIdx.y, blockIdx.z, t.index.x, t.index.y, t.index.z);
#endif
    fiber_prepare(t.fiber, &Scheduler::thread_main, &t, t.name);
    push_ready(&t);
  }
  // The host's writes so far (inputs, NaN fill) happen before everything the block does.
  SIMT_TSAN_RELEASE(&block_entry_sync_);
  const FpControl fp_before = fp_control();
  fiber_switch(host_, next_fiber());
  // Back on the host: every thread returned, one failed, or none can continue. What the
  // returned threads did happens before what the host does next (acquired again after the
  // abort for the threads unwound there).
  SIMT_TSAN_ACQUIRE(&block_exit_sync_);
  std::string outcome = failure_;
  if (outcome.empty() && alive_ > 0) outcome = describe_deadlock();
  if (fp_control() != fp_before) {
    // The fibers share the OS thread's control words (fiber.h): put them back and fail.
    set_fp_control(fp_before);
    if (outcome.empty()) {
      outcome =
          "a thread changed the floating-point control words (rounding mode, flush to zero, "
          "exception masks), which CUDA code cannot do and the emulator's threads share";
    }
  }
  if (alive_ > 0) {
    abort_block();
    SIMT_TSAN_ACQUIRE(&block_exit_sync_);
  }
  current_ = nullptr;
  return outcome;
}

Fiber* Scheduler::thread_main(void* arg) {
  Thread& thread = *static_cast<Thread*>(arg);
  Scheduler& s = instance();
  SIMT_TSAN_ACQUIRE(&s.block_entry_sync_);
  try {
    s.launch_->invoke(s.launch_->closure);
    require_no_pending_async_copies(thread);
  } catch (const AbortThread&) {
  } catch (const std::exception& e) {
    s.fail(thread, e.what());
  } catch (...) {
    s.fail(thread, "an exception that is not a std::exception");
  }
  Fiber& next = s.retire(thread);
  SIMT_TSAN_RELEASE(&s.block_exit_sync_);  // after retire, which may record a failure
  return &next;
}

Thread& Scheduler::self() {
  if (current_ == nullptr) {
    throw std::logic_error(
        "simt: a device intrinsic was called outside a kernel run by simt::launch");
  }
  return *current_;
}

void Scheduler::enter(Thread& thread) {
  current_ = &thread;
  thread.started = true;
  set_thread_index(thread.index);
}

// The next ready thread, or the host when there is none.
Fiber& Scheduler::next_fiber() {
  Thread* next = pop_ready();
  if (next == nullptr) {
    current_ = nullptr;
    return host_;
  }
  enter(*next);
  return next->fiber;
}

void Scheduler::suspend(Thread& thread) {
  fiber_switch(thread.fiber, next_fiber());
  if (aborting_) throw AbortThread{};
}

// The thread has returned: it drops out of every barrier, which may release the others.
Fiber& Scheduler::retire(Thread& thread) {
  thread.exited = true;
  thread.wait = Wait::kNone;
  --alive_;
  Warp& warp = warps_[thread.warp];
  warp.alive &= ~(1u << thread.lane);
  if (failure_.empty() && !aborting_) {
    if (!barrier_waiters_.empty() && barrier_waiters_.size() == alive_) complete_block_barrier();
    complete_warp_groups_after_exit(warp);
  }
  if (!failure_.empty() || aborting_) {
    current_ = nullptr;
    return host_;
  }
  return next_fiber();
}

void Scheduler::fail(const Thread& thread, const std::string& what) {
  if (!failure_.empty()) return;  // the first failure is the one worth reading
  failure_ = format("thread (%u,%u,%u) threw: %s", thread.index.x, thread.index.y, thread.index.z,
                    what.c_str());
}

// Unwinds every thread that has not returned; threads that never started are dropped.
void Scheduler::abort_block() {
  aborting_ = true;
  for (unsigned i = 0; i < thread_count_; ++i) {
    Thread& t = threads_[i];
    if (t.exited) continue;
    if (!t.started) {
      t.exited = true;
      --alive_;
      continue;
    }
    enter(t);
    fiber_switch(host_, t.fiber);
  }
  aborting_ = false;
}

std::string Scheduler::describe_wait(const Thread& thread) const {
  if (thread.wait == Wait::kBlockBarrier) return "__syncthreads()";
  const WarpRequest& r = *thread.request;
  return format("%s(mask 0x%08x) of warp %u, where lanes 0x%08x have not arrived",
                warp_op_name(r.op), r.mask, thread.warp,
                missing_lanes(warps_[thread.warp], r.mask));
}

std::string Scheduler::describe_deadlock() const {
  std::string text = "deadlock, no thread can continue:";
  unsigned returned = 0;
  for (unsigned i = 0; i < thread_count_;) {
    const Thread& first = threads_[i];
    if (first.exited) {
      ++returned;
      ++i;
      continue;
    }
    const std::string wait = describe_wait(first);
    unsigned end = i + 1;
    while (end < thread_count_ && !threads_[end].exited && describe_wait(threads_[end]) == wait) {
      ++end;
    }
    const Thread& last = threads_[end - 1];
    text += format(" threads %u-%u [(%u,%u,%u)..(%u,%u,%u)] wait in %s;", i, end - 1, first.index.x,
                   first.index.y, first.index.z, last.index.x, last.index.y, last.index.z,
                   wait.c_str());
    i = end;
  }
  return text + format(" %u thread(s) returned", returned);
}

// The ring's indices wrap by a compare, not `%`: a division on every switch was 3% of an
// emulated step.
void Scheduler::push_ready(Thread* thread) {
  std::size_t tail = ready_head_ + ready_count_;
  if (tail >= ready_.size()) tail -= ready_.size();
  ready_[tail] = thread;
  ++ready_count_;
}

Thread* Scheduler::pop_ready() {
  if (ready_count_ == 0) return nullptr;
  Thread* thread = ready_[ready_head_];
  if (++ready_head_ == ready_.size()) ready_head_ = 0;
  --ready_count_;
  return thread;
}

}  // namespace simt::detail
