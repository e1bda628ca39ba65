// The command-line convention of resnet_train, every bench binary and test driver, in one place:
//   --help or -h          the usage on stdout, exit 0
//   a bad command line    "<program>: <what is wrong>" then the usage, on stderr, exit 2
//   any other failure     the error's message on stderr, exit 1
// Parsers throw (HelpRequested, UsageError); only run_cli, called from main, turns them into
// exit codes. Under MPI every rank parses the same argv, so only rank 0 prints the usage.
// The parsing itself is cli::Command's (train/cli_command.h, on CLI11).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/error.h"

namespace engine::cli {

// --help or -h was given. Not a std::exception, so that a body's own `catch (std::exception&)`
// (bench_allreduce aborts the MPI job there) lets it through to run_cli.
struct HelpRequested {};

// The command line cannot be run: a missing value, a malformed number, an unknown flag.
class UsageError : public Error {
 public:
  using Error::Error;
};

// text cut at every separator: "a,,b" -> {"a", "", "b"}, "" -> {""}.
std::vector<std::string> split(std::string_view text, char separator);

// Runs `body` and returns its exit code, or the one the convention above gives its exception.
// `usage` starts with "usage: <program> ..." and ends with a newline.
int run_cli(std::string_view program, std::string_view usage, const std::function<int()>& body);

}  // namespace engine::cli
