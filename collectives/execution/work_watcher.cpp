#include "collectives/execution/work_watcher.h"

#include <utility>

namespace engine {

WorkWatcher::~WorkWatcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WorkWatcher::watch(int tag, Work work) {
  {
    std::lock_guard lock(mutex_);
    queue_.emplace_back(tag, std::move(work));
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  changed_.notify_all();
}

std::vector<WorkWatcher::Completion> WorkWatcher::wait_all(std::exception_ptr& first_error) {
  std::unique_lock lock(mutex_);
  // The thread pops a work only once it has completed, so an empty queue means all done.
  changed_.wait(lock, [&] { return queue_.empty(); });
  first_error = std::exchange(first_error_, nullptr);
  return std::exchange(done_, {});
}

void WorkWatcher::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left to wait for
    Work work = queue_.front().second;
    const int tag = queue_.front().first;
    lock.unlock();
    std::exception_ptr error;
    try {
      work.wait();
    } catch (...) {
      error = std::current_exception();
    }
    const Clock::time_point end = Clock::now();
    lock.lock();
    done_.push_back({tag, end});
    if (error && !first_error_) first_error_ = error;
    queue_.pop_front();
    changed_.notify_all();
  }
}

}  // namespace engine
