// Runs a host communicator's collectives one at a time, in the order they were issued, so
// every rank executes them in the same order (which is what keeps ranks' messages matched).
// Asynchronous collectives go to a worker thread; a blocking one runs on the caller's
// thread once everything issued before it has finished, so a small all-reduce pays no
// thread hand-off. After a job fails, later ones fail at once with the first error: the
// ranks' message streams no longer line up.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "collectives/work.h"

namespace engine {

class HostExecutor {
 public:
  explicit HostExecutor(std::string owner);  // names the communicator in errors
  ~HostExecutor();                           // finishes queued jobs, then joins
  HostExecutor(const HostExecutor&) = delete;
  HostExecutor& operator=(const HostExecutor&) = delete;

  // Runs job on this thread after every job issued before; rethrows its error.
  template <typename Job>
  void run(Job&& job) {
    acquire_turn();
    try {
      job();
    } catch (const std::exception& e) {
      release_turn(e.what());
      throw;
    } catch (...) {
      release_turn("unknown error");
      throw;
    }
    release_turn({});
  }

  // Queues job for the worker thread; its Work completes when the job has run.
  Work submit(std::function<void()> job);

  // A communicator's collective: run() when blocking (a completed Work), else submit(). The
  // job must own what it uses (capture by value): it may outlive the call.
  template <typename Job>
  Work execute(bool blocking, Job&& job) {
    if (blocking) {
      run(job);
      return {};
    }
    return submit(std::forward<Job>(job));
  }

 private:
  struct Queued {
    std::function<void()> job;
    std::shared_ptr<HostWorkState> state;
  };
  void acquire_turn();
  void release_turn(const std::string& failure);
  // Throws when an earlier collective failed; call with mutex_ held.
  void require_no_failure() const;
  void worker_loop();

  std::string owner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Queued> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::string failure_;
  std::thread worker_;
};

}  // namespace engine
