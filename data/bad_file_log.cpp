#include "data/bad_file_log.h"

#include "data/warnings.h"

namespace engine::data {

void BadFileLog::record(const std::string& path, const std::string& reason) {
  bool first_time = false;
  {
    std::lock_guard lock(mutex_);
    first_time = warned_.insert(path).second;
  }
  if (first_time) warn("skipping " + path + ": " + reason);
}

size_t BadFileLog::files() const {
  std::lock_guard lock(mutex_);
  return warned_.size();
}

}  // namespace engine::data
