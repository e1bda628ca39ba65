#include "train/stop_signal.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace engine::train {

namespace {

std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

extern "C" void on_stop_signal(int signal_number) {
  int expected = 0;
  if (!g_stop_signal.compare_exchange_strong(expected, signal_number)) {
    // The second signal: no cleanup, only async-signal-safe calls.
    constexpr char kMessage[] = "resnet_train: second stop signal, exiting now\n";
    (void)!write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    _exit(128 + signal_number);
  }
}

}  // namespace

void install_stop_handlers() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking reads and waits carry on; the loop polls the flag
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int stop_signal() {
  return g_stop_signal.load();
}

std::string signal_name(int signal_number) {
  if (signal_number == SIGINT) return "SIGINT";
  if (signal_number == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal_number);
}

}  // namespace engine::train
