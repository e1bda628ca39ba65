// Waiting with a deadline, and what happens when a collective cannot complete: the message
// names the operation, the rank that waited and the peer that never answered, and then the
// job ends (MPI_Abort) so that no rank hangs. Tests of the failure path itself can ask for
// an exception instead.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/error.h"

namespace engine {

enum class TimeoutAction {
  abort_job,    // print the message on stderr and MPI_Abort (exit when MPI is not running)
  throw_error,  // throw CollectiveTimeout (the communicator is unusable afterwards)
};

class CollectiveTimeout : public Error {
 public:
  using Error::Error;
};

// The exit code of a process that ends a job because a collective timed out.
constexpr int kCollectiveTimeoutExitCode = 75;

// What a collective is and how long it may wait for a peer; transports receive it with
// every collective so their messages can say what was going on.
struct OpContext {
  std::string_view op = "collective";  // "all_reduce", "barrier", ...
  std::string_view impl = "";          // "ring-shm", "mpi", ...
  uint64_t sequence = 0;               // the communicator's count of collectives, from 1
                                       // (0: a phase of a program, not a collective)
  size_t bytes = 0;
  int rank = 0;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  TimeoutAction on_timeout = TimeoutAction::abort_job;
};

// "all_reduce #12 (ring-shm, 4194304 bytes) timed out after 3.0 s: rank 1 waited for data
// from rank 0, which never answered". peer < 0: the library did not say which rank.
// note, when not empty, is appended ("its process 1234 has exited").
std::string timeout_message(const OpContext& context, int peer, std::string_view waiting_for,
                            double waited_seconds, std::string_view note = {});

// "all_reduce #12 (nccl, 4194304 bytes) failed after 0.3 s: <error>": a collective that the
// library reports failed, asynchronously.
std::string failure_message(const OpContext& context, std::string_view error,
                            double waited_seconds);

// Builds the message and acts on context.on_timeout. waiting_for completes "rank R waited
// for ... rank P", e.g. "data from" or "a free slot at".
[[noreturn]] void handle_timeout(const OpContext& context, int peer, std::string_view waiting_for,
                                 double waited_seconds, std::string_view note = {});

// Ends the whole job after printing `message` (MPI_Abort when MPI is running).
[[noreturn]] void abort_job(const std::string& message, int exit_code);
// MPI_Abort, with a guard that ends this host's launcher daemon if it has not ended the job
// a few seconds later (launcher_guard.h). MPI must be initialized.
[[noreturn]] void abort_mpi_job(int exit_code);

class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds timeout)
      : start_(std::chrono::steady_clock::now()), timeout_(timeout) {}
  bool expired() const { return std::chrono::steady_clock::now() - start_ >= timeout_; }
  double waited_seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds timeout_;
};

// How a polling loop waits between checks: spin briefly (the answer is usually a few hundred
// nanoseconds away), then yield the core (oversubscribed ranks need it to make progress),
// then sleep in short naps so an idle wait does not burn a core.
class Backoff {
 public:
  explicit Backoff(int spin_iterations = 2000) : spin_iterations_(spin_iterations) {}
  void pause();
  // Spins or yields as pause() does and returns true; returns false, without pausing, once
  // pause() would sleep: for waits that then sleep their own way (a futex).
  bool pause_unless_sleeping();

 private:
  int spin_iterations_;
  int iteration_ = 0;
};

// How many times to spin before yielding: none unless every thread that wants a core has one,
// counting each rank's waiting thread and `compute_threads_per_rank` threads computing beside
// it (the trainer's, while its gradients' all-reduce waits on a worker thread). A spin there
// steals the core from the rank being waited for, or from this rank's own compute: with the
// CPU demo's 2 ranks of 1 thread on 2 cores, the spins were 1.7% of the samples
// (bench/results/comm-spin-ab-amd-epyc.txt).
int spin_iterations_for(int ranks_on_host, int compute_threads_per_rank = 0);

}  // namespace engine
