#include "train/stop_signal.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace engine::train {

namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<pid_t> g_first_sender{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");
static_assert(std::atomic<pid_t>::is_always_lock_free, "used from a signal handler");

extern "C" void on_stop_signal(int signal_number, siginfo_t* info, void*) {
  // The kernel's signals (Ctrl-C at a terminal) have no sending process: 0.
  const pid_t sender = info != nullptr && info->si_code <= 0 ? info->si_pid : 0;
  int expected = 0;
  if (g_stop_signal.compare_exchange_strong(expected, signal_number)) {
    g_first_sender.store(sender);
    return;
  }
  // One request can come from two senders: SLURM signals every process of a job, and
  // Open MPI's daemons (mpirun, orted), themselves in the job, relay SIGUSR1 and SIGTERM to
  // the ranks as well. Only the first signal's sender asking again means "now"; a notice
  // (SIGUSR1) never hurries a stop.
  if (signal_number == SIGUSR1 || sender != g_first_sender.load()) return;
  // The second signal: no cleanup, only async-signal-safe calls.
  constexpr char kMessage[] = "resnet_train: second stop signal, exiting now\n";
  (void)!write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  _exit(128 + signal_number);
}

}  // namespace

void install_stop_handlers() {
  struct sigaction action = {};
  action.sa_sigaction = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // Blocking reads and waits carry on; the loop polls the flag.
  action.sa_flags = SA_RESTART | SA_SIGINFO;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGUSR1, &action, nullptr);
}

int stop_signal() {
  return g_stop_signal.load();
}

std::string signal_name(int signal_number) {
  if (signal_number == SIGINT) return "SIGINT";
  if (signal_number == SIGTERM) return "SIGTERM";
  if (signal_number == SIGUSR1) return "SIGUSR1";
  return "signal " + std::to_string(signal_number);
}

}  // namespace engine::train
