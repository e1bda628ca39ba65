// Bookkeeping of skipped files: one warning per path per log (an epoch loop would repeat it
// every epoch otherwise). The loader and every tool that walks a folder skip bad files through
// one of these, so they all warn and count alike; Batch::skipped counts them per batch.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_set>

#include "data/decode.h"

namespace engine::data {

class BadFileLog {
 public:
  // Runs `use` on the file at `path`. A BadImageError from it skips the file: recorded, and
  // false returned. Any other exception propagates.
  template <typename Use>
  bool use_or_skip(const std::string& path, Use&& use) {
    try {
      use();
      return true;
    } catch (const BadImageError& error) {
      record(path, error.reason());
      return false;
    }
  }

  // Warns "skipping <path>: <reason>" the first time this path fails.
  void record(const std::string& path, const std::string& reason);

  // How many different files have been skipped.
  size_t files() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_set<std::string> warned_;
};

}  // namespace engine::data
