#include "bench/conv_tune_table.h"

#include <algorithm>
#include <cstdio>

#include "kernels/conv_plans.h"
#include "kernels/error.h"
#include "kernels/runtime.h"
#include "nn/conv_plan_file.h"
#include "nn/conv_tuner.h"

namespace engine::bench {

namespace {

// "64x128/s2": the tile and split count ("auto" where the heuristic decides), "/pad" where x's
// channels are padded to the 16-byte vector.
std::string short_algo(const ConvAlgo& algo) {
  return std::string(gemm_tile_name(algo.gemm.tile)) + "/s" +
         (algo.split_k == 0 ? std::string("auto") : std::to_string(algo.split_k)) +
         (algo.padding == ChannelPadding::vector ? "/pad" : "");
}

}  // namespace

void run_conv_tune_table(const std::vector<ConvLayer>& layers, Stream& stream,
                         const ConvTuneTableOptions& options) {
  const Fp32Math math = options.tf32 ? Fp32Math::tf32 : Fp32Math::exact;
  stream.set_fp32_math(math);
  nn::ConvTunerOptions timing;
  timing.samples = options.samples;
  ConvPlans plans;
  for (const DType dtype : options.dtypes) {
    const std::string precision = dtype == DType::bf16 ? "bf16" : options.tf32 ? "tf32" : "f32";
    const std::vector<nn::ResNet::CountedConvProblem> step = options.step_problems(dtype);
    std::printf("%-40s %-28s %5s %-14s %10s %-14s %10s %6s\n",
                ("layer (" + precision + ")").c_str(), "pass", "cands", "heuristic", "us",
                "fastest", "us", "gain");
    double heuristic_total = 0, best_total = 0;
    for (const ConvLayer& layer : layers) {
      for (const ConvPass pass :
           {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_filter}) {
        // Each way the step runs this layer's pass: plain, or with BatchNorm's work fused in.
        for (const auto& [problem, count] : step) {
          if (!(problem == ConvProblem{layer.shape, pass, dtype, math, problem.fusion})) continue;
          const std::vector<nn::ConvCandidateTime> times =
              nn::time_conv_candidates(problem, stream, timing);
          if (times.empty()) continue;
          const auto best = std::min_element(
              times.begin(), times.end(),
              [](const auto& a, const auto& b) { return a.microseconds < b.microseconds; });
          plans.set(problem, {best->algo, best->microseconds});
          heuristic_total += count * times.front().microseconds;
          best_total += count * best->microseconds;
          std::string pass_text(conv_pass_name(pass));
          if (problem.fusion != ConvFusion::none) {
            pass_text += " + " + std::string(conv_fusion_name(problem.fusion));
          }
          std::printf("%-40s %-28s %5zu %-14s %10.1f %-14s %10.1f %5.2fx\n", layer.name.c_str(),
                      pass_text.c_str(), times.size(), short_algo(times.front().algo).c_str(),
                      times.front().microseconds, short_algo(best->algo).c_str(),
                      best->microseconds, times.front().microseconds / best->microseconds);
          std::fflush(stdout);
        }
      }
    }
    std::printf("%-40s %-28s %5s %-14s %10.1f %-14s %10.1f %5.2fx\n", "all conv layers (x count)",
                "", "", "", heuristic_total, "", best_total,
                best_total > 0 ? heuristic_total / best_total : 0.0);
  }
  if (!options.out.empty()) {
    const ConvPlanOrigin origin = nn::conv_plan_origin(stream.device().index);
    nn::write_conv_plan_file(options.out, plans, origin);
    std::printf(
        "wrote %zu rows to %s (commit it as nn/conv_plans/<gpu>.tsv to make it the %s's "
        "default)\n",
        plans.size(), options.out.c_str(), origin.gpu.c_str());
  }
}

}  // namespace engine::bench
