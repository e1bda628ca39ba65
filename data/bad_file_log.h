// Bookkeeping of skipped files: one warning per path per process (an epoch loop would repeat
// it every epoch otherwise), and a count that the epoch summary reports.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>

namespace engine::data {

class BadFileLog {
 public:
  // Counts the file and warns "skipping <path>: <reason>" the first time this path fails.
  void record(const std::string& path, const std::string& reason);
  int64_t count() const { return count_.load(); }
  void reset_count() { count_.store(0); }

 private:
  std::atomic<int64_t> count_{0};
  std::mutex mutex_;
  std::unordered_set<std::string> warned_;
};

}  // namespace engine::data
