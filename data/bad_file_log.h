// Bookkeeping of skipped files: one warning per path per process (an epoch loop would repeat
// it every epoch otherwise). Batch::skipped counts them for the epoch summary.
#pragma once

#include <mutex>
#include <string>
#include <unordered_set>

namespace engine::data {

class BadFileLog {
 public:
  // Warns "skipping <path>: <reason>" the first time this path fails.
  void record(const std::string& path, const std::string& reason);

 private:
  std::mutex mutex_;
  std::unordered_set<std::string> warned_;
};

}  // namespace engine::data
