// --trace FILE --trace-steps A-B: which optimizer steps the timeline records (train/step_trace.h)
// and where each rank writes it, with the checks that end a run before training when the
// trace could not be written: a range the run never reaches, a file that cannot be created.
#pragma once

#include <cstdint>
#include <string>

namespace engine::train {

// Optimizer steps, 1-based and inclusive, as --step-metrics numbers them. The default skips
// the first two steps, whose allocations and first-use tuning are not the steady state.
struct TraceSteps {
  int64_t first = 3, last = 5;
};

// "A-B" with 1 <= A <= B, or "A" alone (one step); cli::UsageError naming `flag` otherwise.
TraceSteps parse_trace_steps(const std::string& flag, const std::string& text);

// A world of one writes `path` itself; with more ranks each writes its own file, the rank
// before the extension: trace.json -> trace.rank0.json, trace -> trace.rank0.
std::string trace_path_for_rank(const std::string& path, int rank, int world);

// Creates (empties) the file, so that an unwritable path fails before training; throws
// engine::Error naming --trace and the path.
void check_trace_file(const std::string& path);

// Why the run (optimizer steps `steps_done` + 1 .. `last_step`) cannot record these steps,
// or "" when it can.
std::string trace_steps_problem(TraceSteps steps, int64_t steps_done, int64_t last_step);

}  // namespace engine::train
