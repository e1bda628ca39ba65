#include "collectives/work.h"

namespace engine {

void HostWorkState::complete(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    error_ = std::move(error);
  }
  done_changed_.notify_all();
}

bool HostWorkState::test() {
  std::lock_guard lock(mutex_);
  if (done_ && error_) std::rethrow_exception(error_);
  return done_;
}

void HostWorkState::wait() {
  std::unique_lock lock(mutex_);
  done_changed_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

}  // namespace engine
