#include "data/warnings.h"

#include <cstdio>
#include <mutex>
#include <utility>

#include "kernels/error.h"

namespace engine::data {

namespace {

std::mutex& sink_mutex() {
  static std::mutex mutex;
  return mutex;
}

WarningSink& installed_sink() {
  static WarningSink sink;
  return sink;
}

}  // namespace

void warn(const std::string& message) {
  const std::string line = rank_prefix() + "warning: " + message;
  std::lock_guard lock(sink_mutex());
  if (installed_sink()) {
    installed_sink()(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

WarningSink set_warning_sink(WarningSink sink) {
  std::lock_guard lock(sink_mutex());
  return std::exchange(installed_sink(), std::move(sink));
}

}  // namespace engine::data
