#include "kernels/error.h"

#include <atomic>

namespace engine {
namespace {
std::atomic<int> g_process_rank{-1};
}  // namespace

Error::Error(const std::string& message) : std::runtime_error(message) {}

void set_process_rank(int rank) {
  g_process_rank.store(rank, std::memory_order_relaxed);
}
int process_rank() {
  return g_process_rank.load(std::memory_order_relaxed);
}

std::string rank_prefix() {
  const int rank = process_rank();
  return rank < 0 ? std::string() : "[rank " + std::to_string(rank) + "] ";
}

void throw_check_failure(std::string_view what, std::string_view call, std::string_view file,
                         int line) {
  std::string message = rank_prefix();
  message.append(what).append(" in ").append(call).append(" at ").append(file);
  message.append(":").append(std::to_string(line));
  throw Error(message);
}

void fail(const std::string& message) {
  throw Error(rank_prefix() + message);
}

}  // namespace engine
