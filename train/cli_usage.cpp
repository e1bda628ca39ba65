#include "train/cli_usage.h"

#include <cstdio>
#include <exception>
#include <vector>

namespace engine::cli {

namespace {

// Rank 0 speaks; a world of one has rank -1.
bool speaks() {
  return process_rank() <= 0;
}

}  // namespace

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

int run_cli(std::string_view program, std::string_view usage, const std::function<int()>& body) {
  const std::string name(program);
  int exit_code = 0;
  try {
    exit_code = body();
  } catch (const HelpRequested&) {
    if (speaks()) std::fwrite(usage.data(), 1, usage.size(), stdout);
  } catch (const UsageError& error) {
    if (speaks()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), error.what());
      std::fwrite(usage.data(), 1, usage.size(), stderr);
    }
    exit_code = 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), error.what());
    exit_code = 1;
  }
  // Out before the caller's next step: under MPI, the barrier that lets the other ranks exit.
  std::fflush(stdout);
  std::fflush(stderr);
  return exit_code;
}

}  // namespace engine::cli
