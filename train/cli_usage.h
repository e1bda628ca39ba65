// The command-line convention of resnet_train, every bench binary and test driver, in one place:
//   --help or -h          the usage on stdout, exit 0
//   a bad command line    "<program>: <what is wrong>" then the usage, on stderr, exit 2
//   any other failure     the error's message on stderr, exit 1
// Parsers throw (HelpRequested, UsageError); only run_cli, called from main, turns them into
// exit codes. Under MPI every rank parses the same argv, so only rank 0 prints the usage.
#pragma once

#include <cstdint>
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

// Walks argv's flags left to right:
//   for (Arguments args(argc, argv); args.next();) {
//     if (args.is("--batch")) batch = args.integer(); else ... else args.reject();
//   }
class Arguments {
 public:
  Arguments(int argc, char** argv) : argc_(argc), argv_(argv) {}

  // Moves to the next flag; false after the last. Throws HelpRequested on --help or -h.
  bool next();
  const std::string& flag() const { return flag_; }
  bool is(std::string_view name) const { return flag_ == name; }

  // The argument after the flag. Throws UsageError when there is none.
  std::string value();
  // The value as a whole number / a number; UsageError naming the flag when it is not one.
  int64_t integer();
  double number();
  // The value as a comma-separated list ("1,25"): its items, or each item as a whole number /
  // a number. UsageError naming the flag and the item when an item is empty or malformed.
  std::vector<std::string> list();
  std::vector<int64_t> integers();
  std::vector<double> numbers();
  // The value through `parse` (parse_dtype, parse_reduce_op, ...): its engine::Error, which
  // says what the accepted values are, becomes a UsageError.
  template <typename Parse>
  auto parsed(Parse&& parse) {
    const std::string text = value();
    try {
      return parse(text);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& error) {
      throw UsageError(flag_ + ": " + error.what());
    }
  }
  // Throws UsageError for an unknown flag (or an argument where none is expected).
  [[noreturn]] void reject() const;

 private:
  int argc_;
  char** argv_;
  int index_ = 0;
  std::string flag_;
};

// text cut at every separator: "a,,b" -> {"a", "", "b"}, "" -> {""}.
std::vector<std::string> split(std::string_view text, char separator);

// The one argument of a program that takes nothing else, such as an output directory; `what`
// names it in the UsageError when it is missing.
std::string single_argument(int argc, char** argv, std::string_view what);

// Runs `body` and returns its exit code, or the one the convention above gives its exception.
// `usage` starts with "usage: <program> ..." and ends with a newline.
int run_cli(std::string_view program, std::string_view usage, const std::function<int()>& body);

}  // namespace engine::cli
