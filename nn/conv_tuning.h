// How a run gets its convolution algorithms (--conv-tuning, issue 40): the committed default
// table of its GPU, then the cache file, then timing whatever neither has (nn/conv_tuner.h),
// writing the cache when anything was timed. In a data-parallel job only rank 0 does this;
// every rank then runs rank 0's choices (encode/decode below carry them through a sum over
// ranks), so all ranks run the same kernels and one choice gives the same bits run to run.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/conv_plans.h"
#include "kernels/stream.h"
#include "nn/conv_tuner.h"

namespace engine::nn {

// auto: time on a GPU, not on the sim device (whose emulated kernels' times say nothing of a
// GPU's) or the CPU; on: time wherever there are CUDA kernels; off: the heuristic's
// algorithms, no table read or written.
enum class ConvTuningMode { automatic, on, off };
std::optional<ConvTuningMode> parse_conv_tuning_mode(std::string_view text);
std::string_view conv_tuning_mode_name(ConvTuningMode mode);

struct ConvTuning {
  ConvTuningMode mode = ConvTuningMode::automatic;
  std::string file;     // the cache; "": default_conv_plan_path; "none": no cache
  double seconds = 60;  // the timing's cap
};

struct ConvPlanChoice {
  ConvPlans plans;
  std::string summary;  // one line for the banner
  std::vector<std::string> warnings;
};

// Rank 0's side: the table for `problems` on `stream`'s device.
ConvPlanChoice choose_conv_plans(const ConvTuning& tuning, const std::vector<ConvProblem>& problems,
                                 Stream& stream, const ConvTunerOptions& timing = {});

// The rows of `plans` for `problems` as numbers (4 per problem: whether there is a row, the
// tile, the split count, the epilogue; all zero where there is none), so that a sum over
// ranks where only rank 0 contributes gives every rank rank 0's table.
std::vector<float> encode_conv_plans(const ConvPlans& plans,
                                     const std::vector<ConvProblem>& problems);
ConvPlans decode_conv_plans(const std::vector<float>& values,
                            const std::vector<ConvProblem>& problems);

}  // namespace engine::nn
