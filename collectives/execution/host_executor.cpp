#include "collectives/execution/host_executor.h"

#include "kernels/error.h"

namespace engine {

HostExecutor::HostExecutor(std::string owner) : owner_(std::move(owner)) {}

HostExecutor::~HostExecutor() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void HostExecutor::acquire_turn() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
  require_no_failure();
  busy_ = true;
}

void HostExecutor::require_no_failure() const {
  if (!failure_.empty()) {
    fail(owner_ + " cannot run more collectives after an earlier one failed: " + failure_);
  }
}

void HostExecutor::release_turn(const std::string& failure) {
  {
    std::lock_guard lock(mutex_);
    busy_ = false;
    if (!failure.empty() && failure_.empty()) failure_ = failure;
  }
  changed_.notify_all();
}

Work HostExecutor::submit(std::function<void()> job) {
  auto state = std::make_shared<HostWorkState>();
  {
    std::lock_guard lock(mutex_);
    require_no_failure();
    queue_.push_back({std::move(job), state});
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  }
  changed_.notify_all();
  return Work(state);
}

void HostExecutor::worker_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock,
                  [&] { return (stopping_ && queue_.empty()) || (!queue_.empty() && !busy_); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    Queued next = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    const bool skip = !failure_.empty();
    const std::string earlier = failure_;
    lock.unlock();
    std::exception_ptr error;
    std::string failure;
    if (skip) {
      error = std::make_exception_ptr(
          Error(owner_ + " skipped a queued collective after an earlier one failed: " + earlier));
    } else {
      try {
        next.job();
      } catch (const std::exception& e) {
        error = std::current_exception();
        failure = e.what();
      } catch (...) {
        error = std::current_exception();
        failure = "unknown error";
      }
    }
    next.state->complete(error);
    release_turn(failure);
    lock.lock();
  }
}

}  // namespace engine
