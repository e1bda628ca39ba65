// A watchdog for collectives that cannot poll their own deadline: a blocking MPI_Allreduce,
// or NCCL work queued on a stream. Each watched collective either finishes (finish(), or
// its probe returns true) or, past its deadline, ends the job with the timeout message
// (timeout.h) after an optional last action (NCCL: abort the communicator). The library
// does not say which peer is missing, so the message says so. A library that reports
// failures asynchronously (NCCL's ncclCommGetAsyncError: a peer's process gone, a network
// error) is polled too, so such a failure ends the job in milliseconds, with the library's
// words, instead of idling every rank until the deadline.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/core/timeout.h"

namespace engine {

class Watchdog {
 public:
  using Probe = std::function<bool()>;  // true once the collective has completed
  using BeforeAbort = std::function<void()>;
  // "" while the library reports no failure, else what it says went wrong.
  using AsyncError = std::function<std::string()>;

  explicit Watchdog(BeforeAbort before_abort = {}, AsyncError async_error = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts watching; without a probe the collective is done when finish(id) is called.
  uint64_t watch(const OpContext& context, Probe finished = {});
  void finish(uint64_t id);

  // finish()es on scope exit: wraps a blocking library call.
  class Scope {
   public:
    Scope(Watchdog& watchdog, const OpContext& context)
        : watchdog_(watchdog), id_(watchdog.watch(context)) {}
    ~Scope() { watchdog_.finish(id_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Watchdog& watchdog_;
    uint64_t id_;
  };

 private:
  struct Watched {
    uint64_t id;
    OpContext context;
    Probe finished;
    std::chrono::steady_clock::time_point start;
  };
  void loop();

  BeforeAbort before_abort_;
  AsyncError async_error_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Watched> watched_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace engine
