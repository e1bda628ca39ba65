#include "collectives/core/timeout.h"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "collectives/core/launcher_guard.h"

namespace engine {

namespace {

// "[rank R] all_reduce #12 (ring-shm, 4194304 bytes) <what> after 3.0 s: "
std::string collective_head(const OpContext& context, std::string_view what,
                            double waited_seconds) {
  char waited[32];
  std::snprintf(waited, sizeof(waited), "%.1f", waited_seconds);
  std::string message = rank_prefix();
  if (context.sequence == 0) {  // not a collective: a phase such as a program's startup
    message.append(context.op).append(" (").append(context.impl).append(") ");
  } else {
    message.append(context.op).append(" #").append(std::to_string(context.sequence));
    message.append(" (").append(context.impl).append(", ");
    message.append(std::to_string(context.bytes)).append(" bytes) ");
  }
  return message.append(what).append(" after ").append(waited).append(" s: ");
}

}  // namespace

std::string timeout_message(const OpContext& context, int peer, std::string_view waiting_for,
                            double waited_seconds, std::string_view note) {
  std::string message = collective_head(context, "timed out", waited_seconds);
  message.append("rank ").append(std::to_string(context.rank));
  if (peer >= 0) {
    message.append(" waited for ")
        .append(waiting_for)
        .append(" rank ")
        .append(std::to_string(peer));
    message.append(", which never answered");
  } else {
    message.append(" waited for ").append(waiting_for);
    message.append(" (the library does not say which rank never answered)");
  }
  if (!note.empty()) message.append("; ").append(note);
  return message;
}

std::string failure_message(const OpContext& context, std::string_view error,
                            double waited_seconds) {
  return collective_head(context, "failed", waited_seconds).append(error);
}

void abort_job(const std::string& message, int exit_code) {
  std::fprintf(stderr, "%s; aborting the job\n", message.c_str());
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) abort_mpi_job(exit_code);
  std::_Exit(exit_code);
}

void abort_mpi_job(int exit_code) {
  guard_launcher_exit(kLauncherExitGrace);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

void handle_timeout(const OpContext& context, int peer, std::string_view waiting_for,
                    double waited_seconds, std::string_view note) {
  std::string message = timeout_message(context, peer, waiting_for, waited_seconds, note);
  if (context.on_timeout == TimeoutAction::throw_error) throw CollectiveTimeout(message);
  abort_job(message, kCollectiveTimeoutExitCode);
}

namespace {
// Yields after the spins and before sleeping: a rank sharing this core (oversubscribed hosts)
// can run and answer, where sleeping at once would cost a wake-up per message.
constexpr int kYieldIterations = 200;
}  // namespace

void Backoff::pause() {
  ++iteration_;
  if (iteration_ <= spin_iterations_) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else if (iteration_ <= spin_iterations_ + kYieldIterations) {
    sched_yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

bool Backoff::pause_unless_sleeping() {
  if (iteration_ >= spin_iterations_ + kYieldIterations) return false;
  pause();
  return true;
}

int spin_iterations_for(int ranks_on_host, int compute_threads_per_rank) {
  const int64_t cores = std::thread::hardware_concurrency();
  const int64_t wanting_a_core =
      static_cast<int64_t>(ranks_on_host) * (1 + std::max(0, compute_threads_per_rank));
  return (cores != 0 && wanting_a_core > cores) ? 0 : 2000;
}

}  // namespace engine
