// Notes when each of a sequence of Works completes, on a thread of its own, so that the
// gradient buckets know when each host all-reduce ended without polling from the compute
// thread (whose polls would only come between layers, milliseconds apart).
//
// Works are waited for in the order they were watched. A host communicator runs its
// collectives one at a time in issue order (host_executor.h), so that is also the order they
// complete in, and each recorded time is the completion itself plus one thread wake-up
// (microseconds).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "collectives/work.h"

namespace engine {

class WorkWatcher {
 public:
  using Clock = std::chrono::steady_clock;
  struct Completion {
    int tag = 0;  // the caller's label for the work
    Clock::time_point end;
  };

  WorkWatcher() = default;
  // Waits for every watched work (errors are dropped), then joins the thread.
  ~WorkWatcher();
  WorkWatcher(const WorkWatcher&) = delete;
  WorkWatcher& operator=(const WorkWatcher&) = delete;

  void watch(int tag, Work work);
  // Blocks until every watched work has completed; returns their completions in watch order
  // and forgets them. first_error: the first work's error, or null.
  std::vector<Completion> wait_all(std::exception_ptr& first_error);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<int, Work>> queue_;
  std::vector<Completion> done_;
  std::exception_ptr first_error_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace engine
