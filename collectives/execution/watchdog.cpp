#include "collectives/execution/watchdog.h"

#include <algorithm>

namespace engine {
namespace {
constexpr auto kProbeInterval = std::chrono::milliseconds(20);
}  // namespace

Watchdog::Watchdog(BeforeAbort before_abort, AsyncError async_error)
    : before_abort_(std::move(before_abort)), async_error_(std::move(async_error)) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t Watchdog::watch(const OpContext& context, Probe finished) {
  std::lock_guard lock(mutex_);
  const uint64_t id = next_id_++;
  watched_.push_back({id, context, std::move(finished), std::chrono::steady_clock::now()});
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  return id;
}

void Watchdog::finish(uint64_t id) {
  std::lock_guard lock(mutex_);
  std::erase_if(watched_, [&](const Watched& w) { return w.id == id; });
}

void Watchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    changed_.wait_for(lock, kProbeInterval);
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(watched_, [](Watched& w) { return w.finished && w.finished(); });
    if (async_error_ && !watched_.empty()) {
      if (const std::string error = async_error_(); !error.empty()) {
        const Watched& w = watched_.front();  // the oldest: the one the failure stopped
        const double waited = std::chrono::duration<double>(now - w.start).count();
        const std::string message = failure_message(w.context, error, waited);
        if (before_abort_) before_abort_();
        abort_job(message, kCollectiveTimeoutExitCode);
      }
    }
    for (const Watched& w : watched_) {
      if (now - w.start < w.context.timeout) continue;
      const double waited = std::chrono::duration<double>(now - w.start).count();
      const std::string message = timeout_message(w.context, -1, "the other ranks", waited);
      if (before_abort_) before_abort_();
      abort_job(message, kCollectiveTimeoutExitCode);
    }
  }
}

}  // namespace engine
