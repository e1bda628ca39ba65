// Chooses each convolution pass's CUDA algorithm by timing (issue 40's tuner): for every
// problem without a row in the table, every candidate that cuda::conv2d_candidates lists runs
// on operands of the problem's shapes, fused as the problem says (ConvFusion: the kernels the
// layer runs; a fused forward's statistics without the sums and finalize its merge may add,
// one channel's work per column tile), between timing events around back-to-back calls, and
// the fastest becomes the problem's row. The heuristic's algorithm is timed first and kept on
// a tie, and where the time cap runs out the problems left keep it (no row). Tuning happens
// before the model's real setup (whose workspaces the chosen split counts size) and before
// any CUDA graph capture. On the CPU there is nothing to choose: it returns at once.
#pragma once

#include <vector>

#include "kernels/conv_plans.h"
#include "kernels/stream.h"

namespace engine::nn {

struct ConvTunerOptions {
  int samples = 3;                    // timed samples per candidate; the median is kept
  double sample_microseconds = 1000;  // back-to-back calls per sample, at least this long
  double budget_seconds = 60;         // the whole tuning's cap on the host's clock
};

struct ConvTuneReport {
  int problems_tuned = 0;    // problems that got a row now
  int problems_skipped = 0;  // left at the heuristic's algorithm: the cap ran out
  int candidates_timed = 0;
  double seconds = 0;
};

// Adds to `plans` a row for each of `problems` that has none, timed on `stream`'s device.
ConvTuneReport tune_convolutions(const std::vector<ConvProblem>& problems, ConvPlans& plans,
                                 Stream& stream, const ConvTunerOptions& options = {});

// Every candidate's time for one problem, in conv2d_candidates' order (bench_kernels --tune
// prints them).
struct ConvCandidateTime {
  ConvAlgo algo;
  double microseconds = 0;
};
std::vector<ConvCandidateTime> time_conv_candidates(const ConvProblem& problem, Stream& stream,
                                                    const ConvTunerOptions& options = {});

}  // namespace engine::nn
