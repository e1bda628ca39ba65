#include "train/trace_steps.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kernels/error.h"
#include "train/cli_command.h"

namespace engine::train {

TraceSteps parse_trace_steps(const std::string& flag, const std::string& text) {
  const size_t dash = text.find('-', 1);  // not a leading minus sign: "-3" is no range
  TraceSteps steps;
  try {
    steps.first = cli::integer_value(flag, text.substr(0, dash));
    steps.last =
        dash == std::string::npos ? steps.first : cli::integer_value(flag, text.substr(dash + 1));
  } catch (const cli::UsageError&) {
    throw cli::UsageError(flag + " takes optimizer steps A-B (e.g. 3-5) or one step, got '" + text +
                          "'");
  }
  if (steps.first < 1 || steps.last < steps.first) {
    throw cli::UsageError(flag + " takes steps A-B with 1 <= A <= B, got '" + text + "'");
  }
  return steps;
}

std::string trace_path_for_rank(const std::string& path, int rank, int world) {
  if (world <= 1) return path;
  const std::filesystem::path p(path);
  const std::string tag = ".rank" + std::to_string(rank);
  if (!p.has_extension()) return path + tag;
  return (p.parent_path() / (p.stem().string() + tag + p.extension().string())).string();
}

void check_trace_file(const std::string& path) {
  std::ofstream file(path, std::ios::trunc);
  if (!file) {
    throw Error("--trace: cannot write " + path + " (" + std::strerror(errno) +
                "); give a file in a writable folder");
  }
}

std::string trace_steps_problem(TraceSteps steps, int64_t steps_done, int64_t last_step) {
  const std::string range = std::to_string(steps.first) + "-" + std::to_string(steps.last);
  if (steps.last > last_step) {
    return "--trace-steps " + range + " ends past the run's last optimizer step, " +
           std::to_string(last_step) + " (--epochs x steps per epoch, or --max-steps)";
  }
  if (steps.first <= steps_done) {
    return "--trace-steps " + range + " starts at or before step " + std::to_string(steps_done) +
           ", where the resumed run begins";
  }
  return "";
}

}  // namespace engine::train
