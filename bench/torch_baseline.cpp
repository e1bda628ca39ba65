#include "bench/torch_baseline.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <sstream>
#include <vector>

extern char** environ;

namespace engine::bench {

TorchProcess::TorchProcess(const std::string& script_name, int threads, double min_seconds) {
  const std::string python = "/usr/bin/python3";  // Debian's, which has python3-torch
  const std::string script = std::string(ENGINE_SOURCE_DIR) + "/tools/" + script_name;
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
  from_script_ = fdopen(from_child[0], "r");
}

TorchProcess::~TorchProcess() {
  if (to_script_ != nullptr) std::fclose(to_script_);  // EOF on its stdin: the script ends
  if (from_script_ != nullptr) std::fclose(from_script_);
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

std::map<std::string, double> TorchProcess::time_case(const std::string& line, int results) {
  std::map<std::string, double> times;
  if (!reason_.empty() || to_script_ == nullptr) return times;
  let_spinning_threads_sleep();  // ours, before PyTorch times
  // A broken pipe (the script died) must be an error here, not a signal that ends the bench.
  static const bool ignore_sigpipe = [] { return std::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)ignore_sigpipe;
  if (std::fprintf(to_script_, "%s\n", line.c_str()) < 0 || std::fflush(to_script_) != 0) {
    fail("PyTorch baseline stopped reading its cases");
    return times;
  }
  std::string unparsed;  // anything else the script printed (warnings, a traceback)
  char buffer[4096];
  while (static_cast<int>(times.size()) < results) {
    if (std::fgets(buffer, sizeof(buffer), from_script_) == nullptr) {
      fail("PyTorch baseline exited: " + unparsed.substr(0, 300));
      return {};
    }
    std::istringstream fields(buffer);
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
    if (!parsed) unparsed += buffer;
  }
  let_spinning_threads_sleep();  // PyTorch's, before ours are timed
  return times;
}

std::string torch_conv_case(const ConvLayer& layer) {
  const Conv2dShape& s = layer.shape;
  std::ostringstream line;
  line << layer.name << '\t' << s.batch << '\t' << s.in_h << '\t' << s.in_w << '\t' << s.in_channels
       << '\t' << s.out_channels << '\t' << s.kernel_h << '\t' << s.kernel_w << '\t' << s.stride_h
       << '\t' << s.pad_h;
  return line.str();
}

}  // namespace engine::bench
