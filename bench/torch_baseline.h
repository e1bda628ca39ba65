// A PyTorch baseline script (tools/bench_torch_ops.py, tools/bench_torch_step.py) kept
// running beside the benchmark, with Debian's python3 and python3-torch, on the same machine
// and thread count. Each case is sent just before (or after) ours is timed, so the two times
// of a case are taken seconds apart: the development VM's slow spells last tens of seconds,
// and timing every PyTorch case first let a spell decide a ratio by which side it hit.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "bench/ops/op_case.h"

namespace engine::bench {

// Whether time_case pauses before and after the script's timing, for the spinning worker
// threads of the side that ran last to go to sleep (0.3 s each): a benchmark timing both
// sides needs them; a check that the script's code runs does not.
enum class SwitchPauses { around_each_case, none };

class TorchProcess {
 public:
  // Starts tools/<script_name> --threads T --min-seconds S with /usr/bin/python3, or the
  // python ENGINE_TORCH_PYTHON names, from the sources' tools/ folder (ENGINE_SOURCE_DIR, when
  // set, replaces the build's). When that cannot be done, unavailable_reason() says why and
  // every time_case() returns nothing.
  TorchProcess(const std::string& script_name, int threads, double min_seconds,
               SwitchPauses pauses = SwitchPauses::around_each_case);
  // An object that never starts a process; unavailable_reason() is `reason`.
  explicit TorchProcess(std::string reason) : reason_(std::move(reason)) {}
  ~TorchProcess();
  TorchProcess(const TorchProcess&) = delete;
  TorchProcess& operator=(const TorchProcess&) = delete;

  const std::string& unavailable_reason() const { return reason_; }

  // Sends one tab-separated case line and reads the `results` lines the script prints for
  // it ("case<TAB>pass<TAB>time_us"): pass -> time in us. Empty once the script has failed,
  // exited, or not answered within 10 minutes (it is then stopped and the rows say so).
  std::map<std::string, double> time_case(const std::string& line, int results);

 private:
  void fail(const std::string& why);
  // The next line the script prints (without '\n'), or nothing at its end or on a timeout.
  std::optional<std::string> read_line();

  pid_t pid_ = -1;
  FILE* to_script_ = nullptr;
  int from_script_ = -1;
  std::string pending_;  // read from the script, not yet returned as a line
  std::string reason_;
  SwitchPauses pauses_ = SwitchPauses::around_each_case;
};

// The case as the tab-separated stdin line tools/bench_torch_ops.py reads: name, op, dtype,
// dims..., and last the op's Python (`source`, its backslashes, tabs and newlines escaped).
std::string torch_request_line(const op_registry::OpCase& c, const char* source);

}  // namespace engine::bench
