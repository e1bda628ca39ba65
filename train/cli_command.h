// One program's command line, parsed by CLI11 under the project's convention (cli_usage.h):
// every flag is registered once with its value's meaning and check, the usage is generated
// from the registrations (one style, each flag with its default), and every parse failure is a
// one-line UsageError naming the flag. CLI11 stays inside cli_command.cpp: it is one large
// header, and most translation units only need to register flags.
//
//   Options o;
//   cli::Command command("bench_x", "[flags]", "What it does.");
//   command.integer("--steps", o.steps, "timed steps");
//   cli::add_batch_size(command, o.batch, "images per rank");   // train/common_flags.h
//   ...
//   int main(int argc, char** argv) { return cli::run_program<Options>(argc, argv, make, check,
//   run); }
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "train/cli_usage.h"

namespace engine::cli {

// The default a flag's usage line shows after its help, in parentheses: by default the value's
// own at registration; "" shows none (the help says what an unset flag does).
using Shown = std::optional<std::string>;

class Command {
 public:
  // `synopsis` follows "usage: <program> " (it may hold newlines); `description` is wrapped.
  Command(std::string program, std::string synopsis, std::string description);
  ~Command();
  Command(Command&&) noexcept;
  Command& operator=(Command&&) noexcept;

  // Value flags. `names` is CLI11's: "-b,--batch-size" or "--epochs"; messages name the long
  // one. A value that does not parse is a UsageError: "--epochs takes an integer, got '2x'".
  void text(std::string_view names, std::string& value, std::string_view value_name,
            std::string_view help, Shown shown = {});
  void integer(std::string_view names, int64_t& value, std::string_view help, Shown shown = {});
  void integer(std::string_view names, int& value, std::string_view help, Shown shown = {});
  void number(std::string_view names, double& value, std::string_view help, Shown shown = {});
  // Comma-separated lists ("1,8,32"); an empty or malformed item is a UsageError.
  void integers(std::string_view names, std::vector<int64_t>& values, std::string_view help,
                Shown shown = {});
  void numbers(std::string_view names, std::vector<double>& values, std::string_view help,
               Shown shown = {});
  void list(std::string_view names, std::vector<std::string>& values, std::string_view value_name,
            std::string_view help, Shown shown = {});
  // Any other value: `set(flag, text)` parses and stores it; an engine::Error it throws (such
  // as parse_dtype's, which lists the accepted values) becomes a UsageError naming the flag.
  using Setter = std::function<void(const std::string& flag, const std::string& text)>;
  void option(std::string_view names, std::string_view value_name, std::string_view help,
              Shown shown, Setter set);
  // A flag without a value: sets `value`, or calls `on`.
  void flag(std::string_view names, bool& value, std::string_view help);
  void flag(std::string_view names, std::function<void()> on, std::string_view help);
  // An argument that is not a flag (a test driver's output directory, a launcher's command line
  // after "--").
  void positional(std::string_view name, std::string& value, std::string_view help);
  void positionals(std::string_view name, std::vector<std::string>& values, std::string_view help);

  // A spelling this program took before: refused, naming the new one ("unknown flag --batch;
  // did you mean -b/--batch-size?").
  void renamed(std::string old_flag, std::string new_flags);

  // Parses argv into the registered values. Throws HelpRequested for -h/--help and UsageError
  // for anything else that is wrong.
  void parse(int argc, char** argv);

  const std::string& program() const;
  // "usage: <program> <synopsis>", the description, then a line per flag with its default.
  std::string usage() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// run_cli (cli_usage.h) with the command's name and usage.
int run_cli(const Command& command, const std::function<int()>& body);

// The main of a program whose flags fill an Options: make(options) registers them, then under
// run_cli the parse, check(options) (UsageError for values that cannot run together) and
// run(options), whose return is the exit code.
template <typename Options, typename Make, typename Check, typename Run>
int run_program(int argc, char** argv, Make&& make, Check&& check, Run&& run) {
  Options options;
  Command command = make(options);
  return run_cli(command, [&] {
    command.parse(argc, argv);
    check(options);
    return run(options);
  });
}

// A program that takes one argument and no flags (a test driver's output directory): its usage
// is "usage: <program> <name>" and `description`; body(argument) runs under run_cli.
int run_single_argument(int argc, char** argv, std::string program, std::string name,
                        std::string description,
                        const std::function<int(const std::string&)>& body);

// The value parsers the typed flags use, for a Setter's own: a UsageError naming `flag` when
// `text` is not one number / a comma-separated list of them (no item empty, none trailing).
int64_t integer_value(const std::string& flag, const std::string& text);
double number_value(const std::string& flag, const std::string& text);  // finite
std::vector<int64_t> integer_list(const std::string& flag, const std::string& text);
std::vector<double> number_list(const std::string& flag, const std::string& text);

// The last "--name" of CLI11 names ("-b,--batch-size" -> "--batch-size"), else the first name.
std::string flag_name(std::string_view names);

}  // namespace engine::cli
