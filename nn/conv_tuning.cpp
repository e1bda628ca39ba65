#include "nn/conv_tuning.h"

#include <cstdio>

#include "kernels/error.h"
#include "kernels/runtime.h"
#include "nn/conv_plan_file.h"

namespace engine::nn {

namespace {

constexpr int kValuesPerProblem = 5;

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

}  // namespace

std::optional<ConvTuningMode> parse_conv_tuning_mode(std::string_view text) {
  if (text == "auto") return ConvTuningMode::automatic;
  if (text == "on") return ConvTuningMode::on;
  if (text == "off") return ConvTuningMode::off;
  return std::nullopt;
}

std::string_view conv_tuning_mode_name(ConvTuningMode mode) {
  switch (mode) {
    case ConvTuningMode::on:
      return "on";
    case ConvTuningMode::off:
      return "off";
    case ConvTuningMode::automatic:
      break;
  }
  return "auto";
}

ConvPlanChoice choose_conv_plans(const ConvTuning& tuning, const std::vector<ConvProblem>& problems,
                                 Stream& stream, const ConvTunerOptions& timing) {
  ConvPlanChoice choice;
  const Device device = stream.device();
  if (device.is_cpu()) return choice;  // one way to run a convolution: nothing to say
  if (tuning.mode == ConvTuningMode::off) {
    choice.summary = "convolution algorithms: the heuristic's (--conv-tuning off)";
    return choice;
  }
  const bool timed_here = tuning.mode == ConvTuningMode::on || !cuda_is_sim_device();
  const ConvPlanOrigin origin = conv_plan_origin(device.index);
  // The committed table of this GPU first; the cache's rows (timed on this very setup) win.
  ConvPlans plans = default_conv_plans(origin);
  int from_defaults = 0, from_cache = 0;
  for (const ConvProblem& problem : problems)
    from_defaults += plans.find(problem) != nullptr;
  const std::string path = tuning.file.empty() ? default_conv_plan_path(origin) : tuning.file;
  const bool cached = tuning.file != "none";
  ConvPlans cache;
  if (cached) {
    std::string warning;
    cache = read_conv_plan_file(path, origin, &warning);
    if (!warning.empty()) choice.warnings.push_back(warning);
    for (const auto& [problem, entry] : cache.entries()) {
      plans.set(problem, entry);
    }
    for (const ConvProblem& problem : problems)
      from_cache += cache.find(problem) != nullptr;
  }
  std::string timed =
      ", none timed (the sim device's times say nothing of a GPU's; "
      "--conv-tuning on times them)";
  if (timed_here) {
    ConvTunerOptions capped = timing;
    capped.budget_seconds = tuning.seconds;
    if (cuda_is_sim_device()) {
      // Emulated kernels: one call per candidate exercises the path; more would say no more.
      capped.samples = 1;
      capped.sample_microseconds = 0;
    }
    const ConvTuneReport report = tune_convolutions(problems, plans, stream, capped);
    timed = ", " + std::to_string(report.problems_tuned) + " timed (" +
            std::to_string(report.candidates_timed) + " candidates) in " +
            seconds_text(report.seconds);
    if (report.problems_skipped > 0) {
      timed += ", " + std::to_string(report.problems_skipped) +
               " left to the heuristic (--conv-tuning-seconds " + seconds_text(tuning.seconds) +
               " ran out)";
    }
    if (cached && report.problems_tuned > 0) {
      // Everything the cache held, and what was timed now.
      for (const ConvProblem& problem : problems) {
        if (const ConvPlanEntry* entry = plans.find(problem)) cache.set(problem, *entry);
      }
      try {
        write_conv_plan_file(path, cache, origin);
        timed += ", saved to " + path;
      } catch (const Error& e) {
        choice.warnings.push_back(std::string(e.what()) + "; the choices are not saved");
      }
    }
  }
  choice.summary = "convolution algorithms: " + std::to_string(problems.size()) + " passes, " +
                   std::to_string(from_defaults) + " from the " + origin.gpu + " table, " +
                   std::to_string(from_cache) + " from " + (cached ? path : "no cache") + timed;
  // Only the rows of this run's problems travel to the other ranks and into the model.
  for (const ConvProblem& problem : problems) {
    if (const ConvPlanEntry* entry = plans.find(problem)) choice.plans.set(problem, *entry);
  }
  return choice;
}

std::vector<float> encode_conv_plans(const ConvPlans& plans,
                                     const std::vector<ConvProblem>& problems) {
  std::vector<float> values(problems.size() * kValuesPerProblem, 0.f);
  for (size_t i = 0; i < problems.size(); ++i) {
    const ConvPlanEntry* entry = plans.find(problems[i]);
    if (entry == nullptr) continue;
    float* v = &values[i * kValuesPerProblem];
    v[0] = 1;
    v[1] = static_cast<float>(entry->algo.gemm.tile);
    v[2] = static_cast<float>(entry->algo.split_k);
    v[3] = static_cast<float>(entry->algo.gemm.epilogue);
    v[4] = static_cast<float>(entry->algo.padding);
  }
  return values;
}

ConvPlans decode_conv_plans(const std::vector<float>& values,
                            const std::vector<ConvProblem>& problems) {
  if (values.size() != problems.size() * kValuesPerProblem) {
    fail("decode_conv_plans: " + std::to_string(values.size()) + " values for " +
         std::to_string(problems.size()) + " problems");
  }
  ConvPlans plans;
  for (size_t i = 0; i < problems.size(); ++i) {
    const float* v = &values[i * kValuesPerProblem];
    if (v[0] != 1) continue;
    ConvAlgo algo;
    algo.gemm.tile = static_cast<cuda::GemmTile>(static_cast<int>(v[1]));
    algo.split_k = static_cast<int>(v[2]);
    algo.gemm.epilogue = static_cast<cuda::GemmEpilogue>(static_cast<int>(v[3]));
    algo.padding = static_cast<ChannelPadding>(static_cast<int>(v[4]));
    plans.set(problems[i], {algo, 0});
  }
  return plans;
}

}  // namespace engine::nn
