// nn::Lars against the MLPerf LARS formula evaluated in double (kernels/ops/optim.h):
// per-tensor trust ratios with BatchNorm and bias parameters excluded (or not), a changing
// rate and grad_scale; resume from the saved state bit for bit; the sim device's CUDA path
// against the CPU; the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/error.h"
#include "kernels/runtime.h"
#include "nn/lars.h"
#include "tests/error_text.h"
#include "tests/nn/tiny_parameters.h"

namespace engine::nn {
namespace {

using testing::flat_pattern;
using testing::make_tiny_model;
using testing::register_tiny_model;
using testing::saved_state;
using testing::write_flat;
using testing::write_tiny_grads;

// The formula per parameter tensor, in double.
struct ReferenceLars {
  LarsConfig config;
  std::vector<double> momentum;

  void step(const ParameterSet& set, std::vector<double>& w, const std::vector<float>& grads,
            double lr, double grad_scale) {
    if (momentum.empty()) momentum.assign(w.size(), 0.0);
    for (const ParameterInfo& p : set.parameters()) {
      const bool adapt = !config.exclude_norm_and_bias || !is_norm_or_bias(p.kind);
      double w2 = 0, g2 = 0;
      for (int64_t i = p.offset; i < p.offset + p.numel(); ++i) {
        w2 += w[i] * w[i];
        g2 += (grads[i] * grad_scale) * (grads[i] * grad_scale);
      }
      const double wd = adapt ? config.weight_decay : 0.0;
      double trust = 1.0;
      if (adapt && w2 > 0 && g2 > 0) {
        trust = config.eta * std::sqrt(w2) /
                (std::sqrt(g2) + wd * std::sqrt(w2) + double(config.epsilon));
      }
      for (int64_t i = p.offset; i < p.offset + p.numel(); ++i) {
        momentum[i] =
            config.momentum * momentum[i] + lr * trust * (grads[i] * grad_scale + wd * w[i]);
        w[i] -= momentum[i];
      }
    }
  }
};

void run_against_reference(const LarsConfig& config, float grad_scale) {
  Stream stream;
  ParameterSet set;
  register_tiny_model(set);
  set.allocate(Device::cpu(), stream);
  const std::vector<float> initial = flat_pattern(set, 1);
  write_flat(set.flat_values(), initial, stream);
  std::vector<double> expected(initial.begin(), initial.end());
  Lars lars(set, config, stream);
  ReferenceLars reference{config, {}};
  for (int k = 0; k < 5; ++k) {
    const float lr = config.lr * (1.f - 0.15f * static_cast<float>(k));
    const std::vector<float> grads = flat_pattern(set, 100 + static_cast<uint64_t>(k));
    write_flat(set.flat_grads(), grads, stream);
    set.mark_grads_written();
    lars.step(lr, stream, grad_scale);
    reference.step(set, expected, grads, lr, grad_scale);
    const std::vector<float> actual = set.flat_values().to_floats(stream);
    for (size_t i = 0; i < actual.size(); ++i)
      ASSERT_NEAR(actual[i], expected[i], 1e-6 + 1e-5 * std::abs(expected[i]))
          << "step " << k << " element " << i;
  }
}

TEST(Lars, MatchesTheFormulaInDouble) {
  const LarsConfig mlperf{.lr = 8.f, .momentum = 0.9f, .weight_decay = 5e-5f, .eta = 1e-3f};
  run_against_reference(mlperf, 1.f);
  LarsConfig strong = mlperf;
  strong.lr = 1.f;
  strong.weight_decay = 1e-2f;
  strong.eta = 0.02f;
  strong.epsilon = 1e-3f;
  run_against_reference(strong, 0.5f);
  LarsConfig everything = strong;
  everything.exclude_norm_and_bias = false;
  run_against_reference(everything, 1.f);
}

TEST(Lars, ExcludedTensorsTakeThePlainRate) {
  // One step from zero momentum: an excluded tensor moves by exactly lr * g.
  Stream stream;
  ParameterSet set;
  register_tiny_model(set);
  set.allocate(Device::cpu(), stream);
  const std::vector<float> values = flat_pattern(set, 2), grads = flat_pattern(set, 3);
  write_flat(set.flat_values(), values, stream);
  write_flat(set.flat_grads(), grads, stream);
  set.mark_grads_written();
  Lars lars(set, {.lr = 0.5f, .weight_decay = 0.1f}, stream);
  lars.step(0.5f, stream);
  const std::vector<float> after = set.flat_values().to_floats(stream);
  for (const ParameterInfo& p : set.parameters()) {
    if (!is_norm_or_bias(p.kind)) continue;
    for (int64_t i = p.offset; i < p.offset + p.numel(); ++i)
      EXPECT_EQ(after[i], values[i] - 0.5f * grads[i]) << p.name;
  }
}

TEST(Lars, ResumesFromItsStateBitForBit) {
  Stream stream;
  const LarsConfig config{.lr = 2.f, .weight_decay = 1e-3f, .eta = 0.01f};
  ParameterSet first, resumed;
  for (ParameterSet* set : {&first, &resumed})
    make_tiny_model(*set, Device::cpu(), 7, stream);
  Lars running(first, config, stream);
  const auto step = [&](ParameterSet& set, Lars& lars, int k) {
    write_tiny_grads(set, 50 + static_cast<uint64_t>(k), stream);
    lars.step(2.f, stream);
  };
  for (int k = 0; k < 2; ++k)
    step(first, running, k);
  write_flat(resumed.flat_values(), first.flat_values().to_floats(stream), stream);
  const OptimizerState state = saved_state(running, stream);
  Lars loaded(resumed, config, stream);
  loaded.load_state(state, stream);
  EXPECT_TRUE(loaded.started());
  for (int k = 2; k < 4; ++k) {
    step(first, running, k);
    step(resumed, loaded, k);
  }
  EXPECT_EQ(first.flat_values().to_floats(stream), resumed.flat_values().to_floats(stream));
}

TEST(Lars, ErrorsSayWhatIsWrong) {
  using engine::testing::error_of;
  Stream stream;
  ParameterSet set;
  register_tiny_model(set);
  set.allocate(Device::cpu(), stream);
  EXPECT_NE(error_of([&] { Lars(set, {.eta = 0.f}, stream); }).find("eta must be > 0"),
            std::string::npos);
  Lars lars(set, {}, stream);
  OptimizerState adamw_state{.started = true, .buffers = {}, .metadata = {}};
  adamw_state.buffers["exp_avg"] = std::vector<float>(176);
  EXPECT_NE(error_of([&] { lars.load_state(adamw_state, stream); }).find("no momentum_buffer"),
            std::string::npos);
}

TEST(Lars, CudaMatchesCpu) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  const LarsConfig config{.lr = 2.f, .weight_decay = 1e-3f, .eta = 0.01f};
  Stream host;
  Stream gpu(Device::cuda(0));
  ParameterSet cpu_set, gpu_set;
  make_tiny_model(cpu_set, Device::cpu(), 3, host);
  make_tiny_model(gpu_set, Device::cuda(0), 3, gpu);
  Lars cpu_lars(cpu_set, config, host), gpu_lars(gpu_set, config, gpu);
  for (int k = 0; k < 4; ++k) {
    write_tiny_grads(cpu_set, 30 + static_cast<uint64_t>(k), host);
    write_tiny_grads(gpu_set, 30 + static_cast<uint64_t>(k), gpu);
    cpu_lars.step(2.f, host);
    gpu_lars.step(2.f, gpu);
  }
  const std::vector<double> cpu_sums = cpu_lars.sum_squares().to_doubles(host);
  const std::vector<double> gpu_sums = gpu_lars.sum_squares().to_doubles(gpu);
  for (size_t i = 0; i < cpu_sums.size(); ++i)
    EXPECT_NEAR(gpu_sums[i], cpu_sums[i], 1e-6 * (1 + cpu_sums[i])) << "sum " << i;
  const std::vector<float> expected = cpu_set.flat_values().to_floats(host);
  const std::vector<float> actual = gpu_set.flat_values().to_floats(gpu);
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], 1e-6 + 1e-5 * std::abs(expected[i])) << "element " << i;
}

}  // namespace
}  // namespace engine::nn
