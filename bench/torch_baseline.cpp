#include "bench/torch_baseline.h"

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "bench/ops/op_description.h"

extern char** environ;

namespace engine::bench {

namespace {
// The environment's value of `name`, or `fallback` when it is unset or empty.
std::string from_environment(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}
}  // namespace

TorchProcess::TorchProcess(const std::string& script_name, int threads, double min_seconds,
                           SwitchPauses pauses)
    : pauses_(pauses) {
  // Debian's python3 has python3-torch; a GPU machine's PyTorch is another python's
  // (ENGINE_TORCH_PYTHON), and its copy of the sources another folder (ENGINE_SOURCE_DIR).
  const std::string python = from_environment("ENGINE_TORCH_PYTHON", "/usr/bin/python3");
  const std::string script =
      from_environment("ENGINE_SOURCE_DIR", ENGINE_SOURCE_DIR) + "/tools/" + script_name;
  if (access(python.c_str(), X_OK) != 0 || access(script.c_str(), R_OK) != 0) {
    reason_ = "no " + python + " or " + script;
    return;
  }
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0) {
    reason_ = "cannot create a pipe for " + script_name;
    return;
  }
  if (pipe(from_child) != 0) {
    close(to_child[0]);
    close(to_child[1]);
    reason_ = "cannot create a pipe for " + script_name;
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDERR_FILENO);
  for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]})
    posix_spawn_file_actions_addclose(&actions, fd);
  const std::string threads_text = std::to_string(threads);
  const std::string seconds_text = std::to_string(min_seconds);
  std::vector<std::string> args = {python,       script,          "--threads",
                                   threads_text, "--min-seconds", seconds_text};
  std::vector<char*> argv;
  for (std::string& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  const int spawned = posix_spawn(&pid_, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  if (spawned != 0) {
    close(to_child[1]);
    close(from_child[0]);
    pid_ = -1;
    reason_ = "cannot run " + python;
    return;
  }
  to_script_ = fdopen(to_child[1], "w");
  from_script_ = from_child[0];
}

TorchProcess::~TorchProcess() {
  if (to_script_ != nullptr) std::fclose(to_script_);  // EOF on its stdin: the script ends
  if (from_script_ >= 0) close(from_script_);
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

void TorchProcess::fail(const std::string& why) {
  reason_ = why;
  if (to_script_ != nullptr) std::fclose(to_script_);
  to_script_ = nullptr;
  if (pid_ > 0) kill(pid_, SIGTERM);
}

namespace {
// Worker threads spin for a while after their last job before they sleep: libgomp's OpenMP
// threads for a few ms, the OpenBLAS (pthread) workers that PyTorch's GEMMs use for about
// 0.1 s. On 2 cores the other side's spinning threads took the cores from the side being
// timed, and rows after a switch came out at multiples of the 4 ms scheduler tick (a 100 us
// fc forward read 16 ms). A pause at each switch lets them all go to sleep.
void let_spinning_threads_sleep() {
  usleep(300 * 1000);
}
}  // namespace

namespace {
// The last non-empty line of what the script printed: for a Python traceback, the error
// itself. Table notes are one line.
std::string last_line(const std::string& output) {
  std::istringstream lines(output);
  std::string line, last;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last.empty() ? "(no output)" : last;
}
}  // namespace

std::map<std::string, double> TorchProcess::time_case(const std::string& line, int results) {
  std::map<std::string, double> times;
  if (!reason_.empty() || to_script_ == nullptr) return times;
  if (pauses_ == SwitchPauses::around_each_case) let_spinning_threads_sleep();  // ours
  // A broken pipe (the script died) must be an error here, not a signal that ends the bench.
  static const bool ignore_sigpipe = [] { return std::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)ignore_sigpipe;
  if (std::fprintf(to_script_, "%s\n", line.c_str()) < 0 || std::fflush(to_script_) != 0) {
    // It has exited: what it printed last (a traceback, usually) says why.
    std::string output;
    while (const std::optional<std::string> text = read_line())
      output += *text + "\n";
    if (reason_.empty()) fail("PyTorch baseline exited: " + last_line(output));
    return times;
  }
  std::string unparsed;  // anything else the script printed (warnings, a traceback)
  while (static_cast<int>(times.size()) < results) {
    const std::optional<std::string> output = read_line();
    if (!output) {
      if (reason_.empty()) fail("PyTorch baseline exited: " + last_line(unparsed));
      return {};
    }
    std::istringstream fields(*output);
    std::string name, pass, time;
    bool parsed = false;
    if (std::getline(fields, name, '\t') && std::getline(fields, pass, '\t') &&
        std::getline(fields, time)) {
      try {
        times[pass] = std::stod(time);
        parsed = true;
      } catch (const std::exception&) {
      }
    }
    if (!parsed) unparsed += *output + "\n";
  }
  if (pauses_ == SwitchPauses::around_each_case) let_spinning_threads_sleep();  // PyTorch's
  return times;
}

std::optional<std::string> TorchProcess::read_line() {
  constexpr int kTimeoutMs = 10 * 60 * 1000;  // one case takes seconds; a hung script, forever
  while (true) {
    const size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return line;
    }
    pollfd ready{from_script_, POLLIN, 0};
    const int polled = poll(&ready, 1, kTimeoutMs);
    if (polled < 0 && errno == EINTR) continue;
    if (polled == 0) {
      fail("PyTorch baseline did not answer within 10 minutes");
      return std::nullopt;
    }
    char buffer[4096];
    const ssize_t got = polled > 0 ? read(from_script_, buffer, sizeof(buffer)) : -1;
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return std::nullopt;  // the script ended
    pending_.append(buffer, static_cast<size_t>(got));
  }
}

std::string torch_request_line(const op_registry::OpCase& c, const char* source) {
  std::string line = c.name + "\t" + std::string(op_registry::op_name(c.op));
  line += '\t';  // appended apart: g++ 12 warns falsely (-Wrestrict) on "\t" + string
  line += dtype_name(c.dtype);
  for (int64_t d : c.dims) {
    line += '\t';
    line += std::to_string(d);
  }
  line += '\t';
  for (const char* p = source; *p != '\0'; ++p) {
    if (*p == '\\') {
      line += "\\\\";
    } else if (*p == '\n') {
      line += "\\n";
    } else if (*p == '\t') {
      line += "\\t";
    } else {
      line += *p;
    }
  }
  return line;
}

}  // namespace engine::bench
