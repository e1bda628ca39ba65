#include "bench/torch_baseline.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace engine::bench {

TorchBaseline run_torch_conv_baseline(const std::vector<ConvLayer>& layers, int threads,
                                      double min_seconds) {
  std::vector<std::string> cases;
  for (const ConvLayer& layer : layers) {
    const Conv2dShape& s = layer.shape;
    std::ostringstream line;
    line << layer.name << '\t' << s.batch << '\t' << s.in_h << '\t' << s.in_w << '\t'
         << s.in_channels << '\t' << s.out_channels << '\t' << s.kernel_h << '\t' << s.kernel_w
         << '\t' << s.stride_h << '\t' << s.pad_h;
    cases.push_back(line.str());
  }
  return run_torch_baseline("bench_torch_kernels.py", cases, threads, min_seconds);
}

TorchBaseline run_torch_baseline(const std::string& script_name,
                                 const std::vector<std::string>& cases, int threads,
                                 double min_seconds) {
  TorchBaseline result;
  const std::string python = "/usr/bin/python3";  // Debian's, which has python3-torch
  const std::string script = std::string(ENGINE_SOURCE_DIR) + "/tools/" + script_name;
  if (access(python.c_str(), X_OK) != 0 || access(script.c_str(), R_OK) != 0) {
    result.unavailable_reason = "no " + python + " or " + script;
    return result;
  }
  char input_path[] = "/tmp/bench_torch_cases_XXXXXX";
  const int fd = mkstemp(input_path);
  if (fd < 0) {
    result.unavailable_reason = "cannot create a temporary file";
    return result;
  }
  close(fd);
  {
    std::ofstream input(input_path);
    for (const std::string& line : cases)
      input << line << '\n';
  }
  const std::string command = python + " " + script + " --threads " + std::to_string(threads) +
                              " --min-seconds " + std::to_string(min_seconds) + " < " + input_path +
                              " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  if (pipe != nullptr) {
    char buffer[4096];
    while (fgets(buffer, sizeof(buffer), pipe) != nullptr)
      output += buffer;
    const int status = pclose(pipe);
    if (status != 0)
      result.unavailable_reason = "PyTorch baseline failed: " + output.substr(0, 300);
  } else {
    result.unavailable_reason = "cannot run " + python;
  }
  unlink(input_path);
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name, pass, time;
    if (std::getline(fields, name, '\t') && std::getline(fields, pass, '\t') &&
        std::getline(fields, time)) {
      try {
        result.time_us[{name, pass}] = std::stod(time);
      } catch (...) {
        // A line that is not a result (a warning from python); ignored.
      }
    }
  }
  return result;
}

}  // namespace engine::bench
