#include "train/cli_command.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

namespace engine::cli {

namespace {

constexpr size_t kNameColumn = 25;  // "  " + names, then the help from column 27
constexpr size_t kWidth = 96;

// "-b,--batch-size" -> "-b, --batch-size", with the value's placeholder after the last name.
std::string shown_names(std::string_view names, std::string_view value_name) {
  std::string text;
  for (const std::string& name : split(names, ',')) {
    if (!text.empty()) text += ", ";
    text += name;
  }
  if (!value_name.empty()) text += " " + std::string(value_name);
  return text;
}

// `text`'s words, the lines after the first indented to `column`, each broken before kWidth;
// `used` is how much of the first line is taken. An explicit newline starts a line.
std::string wrapped(std::string_view text, size_t column, size_t used) {
  std::string out;
  const std::string indent(column, ' ');
  bool first_line = true;
  for (const std::string& line : split(text, '\n')) {
    if (!first_line) {
      out += "\n" + indent;
      used = column;
    }
    first_line = false;
    bool line_empty = true;
    for (const std::string& word : split(line, ' ')) {
      if (word.empty()) continue;
      if (!line_empty && used + 1 + word.size() > kWidth) {
        out += "\n" + indent;
        used = column;
        line_empty = true;
      }
      if (!line_empty) {
        out += ' ';
        ++used;
      }
      out += word;
      used += word.size();
      line_empty = false;
    }
  }
  return out;
}

template <typename Number>
bool parse_number(const std::string& text, Number& value) {
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) return false;
  if constexpr (std::is_floating_point_v<Number>) return std::isfinite(value);
  return true;
}

// The items of a comma-separated list, none empty.
std::vector<std::string> list_items(const std::string& flag, const std::string& text) {
  std::vector<std::string> items = split(text, ',');
  for (const std::string& item : items) {
    if (item.empty()) {
      throw UsageError(flag + " takes a comma-separated list, got '" + text + "'");
    }
  }
  return items;
}

template <typename Number>
std::vector<Number> list_numbers(const std::string& flag, const std::string& text,
                                 const char* kind) {
  std::vector<Number> values;
  for (const std::string& item : list_items(flag, text)) {
    Number value{};
    if (!parse_number(item, value))
      throw UsageError(flag + " takes " + kind + ", got '" + item + "'");
    values.push_back(value);
  }
  return values;
}

template <typename Number>
Number one_number(const std::string& flag, const std::string& text, const char* kind) {
  Number value{};
  if (!parse_number(text, value))
    throw UsageError(flag + " takes " + kind + ", got '" + text + "'");
  return value;
}

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

template <typename T>
std::string joined(const std::vector<T>& values) {
  std::string text;
  for (const T& value : values) {
    if (!text.empty()) text += ',';
    if constexpr (std::is_same_v<T, std::string>)
      text += value;
    else if constexpr (std::is_floating_point_v<T>)
      text += format_number(value);
    else
      text += std::to_string(value);
  }
  return text;
}

}  // namespace

int64_t integer_value(const std::string& flag, const std::string& text) {
  return one_number<int64_t>(flag, text, "an integer");
}

double number_value(const std::string& flag, const std::string& text) {
  return one_number<double>(flag, text, "a number");
}

std::vector<int64_t> integer_list(const std::string& flag, const std::string& text) {
  return list_numbers<int64_t>(flag, text, "integers");
}

std::vector<double> number_list(const std::string& flag, const std::string& text) {
  return list_numbers<double>(flag, text, "numbers");
}

std::string flag_name(std::string_view names) {
  const std::vector<std::string> all = split(names, ',');
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->starts_with("--")) return *it;
  }
  return all.front();
}

struct Command::State {
  std::string program, synopsis, description;
  CLI::App app;
  struct Line {
    std::string names, help;
  };
  std::vector<Line> lines;                     // the usage's, in registration order
  std::map<std::string, std::string> renamed;  // old spelling -> the new names

  void add_line(std::string_view names, std::string_view value_name, std::string_view help,
                const std::string& shown) {
    std::string text(help);
    if (!shown.empty()) text += " (" + shown + ")";
    lines.push_back({shown_names(names, value_name), text});
  }
};

Command::Command(std::string program, std::string synopsis, std::string description)
    : state_(std::make_unique<State>()) {
  state_->program = std::move(program);
  state_->synopsis = std::move(synopsis);
  state_->description = std::move(description);
  CLI::App& app = state_->app;
  app.name(state_->program);
  app.set_help_flag("-h,--help", "this text");
  // A flag given twice keeps its last value, as a shell script's later override expects.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

Command::~Command() = default;
Command::Command(Command&&) noexcept = default;
Command& Command::operator=(Command&&) noexcept = default;

const std::string& Command::program() const {
  return state_->program;
}

void Command::option(std::string_view names, std::string_view value_name, std::string_view help,
                     Shown shown, Setter set) {
  const std::string flag = flag_name(names);
  state_->app.add_option_function<std::string>(
      std::string(names),
      [flag, set = std::move(set)](const std::string& text) {
        try {
          set(flag, text);
        } catch (const UsageError&) {
          throw;
        } catch (const Error& error) {
          throw UsageError(flag + ": " + error.what());
        }
      },
      std::string(help));
  state_->add_line(names, value_name, help, shown.value_or(""));
}

void Command::text(std::string_view names, std::string& value, std::string_view value_name,
                   std::string_view help, Shown shown) {
  option(names, value_name, help, shown.value_or(value),
         [&value](const std::string&, const std::string& text) { value = text; });
}

void Command::integer(std::string_view names, int64_t& value, std::string_view help, Shown shown) {
  option(names, "N", help, shown.value_or(std::to_string(value)),
         [&value](const std::string& flag, const std::string& text) {
           value = one_number<int64_t>(flag, text, "an integer");
         });
}

void Command::integer(std::string_view names, int& value, std::string_view help, Shown shown) {
  option(names, "N", help, shown.value_or(std::to_string(value)),
         [&value](const std::string& flag, const std::string& text) {
           value = one_number<int>(flag, text, "an integer");
         });
}

void Command::number(std::string_view names, double& value, std::string_view help, Shown shown) {
  option(names, "X", help, shown.value_or(format_number(value)),
         [&value](const std::string& flag, const std::string& text) {
           value = one_number<double>(flag, text, "a number");
         });
}

void Command::integers(std::string_view names, std::vector<int64_t>& values, std::string_view help,
                       Shown shown) {
  option(names, "A,B,...", help, shown.value_or(joined(values)),
         [&values](const std::string& flag, const std::string& text) {
           values = list_numbers<int64_t>(flag, text, "integers");
         });
}

void Command::numbers(std::string_view names, std::vector<double>& values, std::string_view help,
                      Shown shown) {
  option(names, "A,B,...", help, shown.value_or(joined(values)),
         [&values](const std::string& flag, const std::string& text) {
           values = list_numbers<double>(flag, text, "numbers");
         });
}

void Command::list(std::string_view names, std::vector<std::string>& values,
                   std::string_view value_name, std::string_view help, Shown shown) {
  option(names, value_name, help, shown.value_or(joined(values)),
         [&values](const std::string& flag, const std::string& text) {
           values = list_items(flag, text);
         });
}

void Command::flag(std::string_view names, bool& value, std::string_view help) {
  flag(
      names, [&value] { value = true; }, help);
}

void Command::flag(std::string_view names, std::function<void()> on, std::string_view help) {
  state_->app.add_flag_callback(std::string(names), std::move(on), std::string(help));
  state_->add_line(names, "", help, "");
}

void Command::positional(std::string_view name, std::string& value, std::string_view help) {
  state_->app.add_option(std::string(name), value, std::string(help));
  state_->add_line(name, "", help, "");
}

void Command::positionals(std::string_view name, std::vector<std::string>& values,
                          std::string_view help) {
  state_->app.add_option(std::string(name), values, std::string(help))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  state_->add_line(name, "", help, "");
}

void Command::renamed(std::string old_flag, std::string new_flags) {
  state_->renamed[std::move(old_flag)] = std::move(new_flags);
}

void Command::parse(int argc, char** argv) {
  CLI::App& app = state_->app;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    throw HelpRequested{};
  } catch (const CLI::ExtrasError&) {
    const std::vector<std::string> extras = app.remaining();
    const std::string first = extras.empty() ? "" : extras.front();
    if (!first.starts_with("-")) throw UsageError("unexpected argument '" + first + "'");
    const std::string name = first.substr(0, first.find('='));
    const auto renamed = state_->renamed.find(name);
    if (renamed != state_->renamed.end()) {
      throw UsageError("unknown flag " + name + "; did you mean " + renamed->second + "?");
    }
    throw UsageError("unknown flag " + name);
  } catch (const CLI::ArgumentMismatch& error) {
    // CLI11 words a missing value "--epochs: 1 required TEXT missing".
    const std::string what = error.what();
    if (what.find("required") != std::string::npos && what.find("missing") != std::string::npos) {
      throw UsageError(what.substr(0, what.find(':')) + " needs a value");
    }
    throw UsageError(what);
  } catch (const CLI::ParseError& error) {
    throw UsageError(error.what());
  }
}

std::string Command::usage() const {
  const State& s = *state_;
  std::string text = "usage: " + s.program + " " + s.synopsis + "\n";
  if (!s.description.empty()) text += wrapped(s.description, 0, 0) + "\n";
  std::vector<State::Line> lines = s.lines;
  lines.push_back({"-h, --help", "this text"});
  for (const State::Line& line : lines) {
    std::string row = "  " + line.names;
    if (row.size() + 1 > kNameColumn + 2) {
      row += "\n" + std::string(kNameColumn + 2, ' ');
    } else {
      row.resize(kNameColumn + 2, ' ');
    }
    text += row + wrapped(line.help, kNameColumn + 2, kNameColumn + 2) + "\n";
  }
  return text;
}

int run_cli(const Command& command, const std::function<int()>& body) {
  return run_cli(command.program(), command.usage(), body);
}

int run_single_argument(int argc, char** argv, std::string program, std::string name,
                        std::string description,
                        const std::function<int(const std::string&)>& body) {
  std::string argument;
  Command command(std::move(program), name, std::move(description));
  command.positional(name, argument, "the one argument");
  return run_cli(command, [&] {
    command.parse(argc, argv);
    if (argument.empty()) throw UsageError(name + " is missing");
    return body(argument);
  });
}

}  // namespace engine::cli
