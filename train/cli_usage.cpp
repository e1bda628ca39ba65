#include "train/cli_usage.h"

#include <charconv>
#include <cstdio>
#include <exception>

namespace engine::cli {

namespace {

// Rank 0 speaks; a world of one has rank -1.
bool speaks() {
  return process_rank() <= 0;
}

template <typename Number>
Number parse_whole(const std::string& flag, const std::string& text, const char* kind) {
  Number value{};
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) {
    throw UsageError(flag + " takes " + kind + ", got '" + text + "'");
  }
  return value;
}

}  // namespace

bool Arguments::next() {
  if (++index_ >= argc_) return false;
  flag_ = argv_[index_];
  if (flag_ == "--help" || flag_ == "-h") throw HelpRequested{};
  return true;
}

std::string Arguments::value() {
  if (index_ + 1 >= argc_) throw UsageError(flag_ + " needs a value");
  return argv_[++index_];
}

int64_t Arguments::integer() {
  return parse_whole<int64_t>(flag_, value(), "an integer");
}

double Arguments::number() {
  return parse_whole<double>(flag_, value(), "a number");
}

std::vector<std::string> Arguments::list() {
  const std::string text = value();
  std::vector<std::string> items = split(text, ',');
  for (const std::string& item : items) {
    if (item.empty()) {
      throw UsageError(flag_ + " takes a comma-separated list, got '" + text + "'");
    }
  }
  return items;
}

std::vector<int64_t> Arguments::integers() {
  std::vector<int64_t> values;
  for (const std::string& item : list())
    values.push_back(parse_whole<int64_t>(flag_, item, "integers"));
  return values;
}

std::vector<double> Arguments::numbers() {
  std::vector<double> values;
  for (const std::string& item : list())
    values.push_back(parse_whole<double>(flag_, item, "numbers"));
  return values;
}

void Arguments::reject() const {
  if (flag_.starts_with("-")) throw UsageError("unknown flag " + flag_);
  throw UsageError("unexpected argument '" + flag_ + "'");
}

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

std::string single_argument(int argc, char** argv, std::string_view what) {
  std::string argument;
  for (Arguments args(argc, argv); args.next();) {
    if (!argument.empty() || args.flag().starts_with("-")) args.reject();
    argument = args.flag();
  }
  if (argument.empty()) throw UsageError(std::string(what) + " is missing");
  return argument;
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
