// Work: the handle of a collective started with an *_async call. wait() blocks the calling
// thread until it is done; wait(stream) only orders `stream` after it (CUDA; on the CPU the
// two are the same); test() asks without waiting. A failed collective rethrows its error
// from wait() and test(). A default-constructed Work is already complete.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>

namespace engine {

class Stream;

// What a Work waits on: a host job's completion or a CUDA event (stream_work.h).
class WorkState {
 public:
  virtual ~WorkState() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
  virtual void wait(Stream& stream) = 0;
};

class Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<WorkState> state) : state_(std::move(state)) {}

  void wait() {
    if (state_) state_->wait();
  }
  void wait(Stream& stream) {
    if (state_) state_->wait(stream);
  }
  bool test() { return !state_ || state_->test(); }

 private:
  std::shared_ptr<WorkState> state_;
};

// A job run by a host thread: done when the thread says so.
class HostWorkState : public WorkState {
 public:
  void complete(std::exception_ptr error);
  bool test() override;
  void wait() override;
  void wait(Stream&) override { wait(); }

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace engine
