// nn::AdamW against torch.optim.AdamW and nn::GradClip against clip_grad_norm_ (PyTorch 1.13,
// tests/nn/golden/optimizers.golden from tools/make_optim_goldens.py): several steps with a
// changing rate, weight decay everywhere or not on norm and bias parameters; then reset,
// resume from the saved state, the sim device's CUDA path against the CPU, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "kernels/error.h"
#include "kernels/runtime.h"
#include "nn/adamw.h"
#include "nn/grad_clip.h"
#include "tests/error_text.h"
#include "tests/nn/optim_golden.h"
#include "tests/nn/tiny_parameters.h"

namespace engine::nn {
namespace {

using testing::flat_pattern;
using testing::make_tiny_model;
using testing::OptimGoldenCase;
using testing::register_tiny_model;
using testing::saved_state;
using testing::write_flat;
using testing::write_tiny_grads;

using TensorsByName = std::map<std::string, std::vector<double>>;

// The golden's per-parameter values laid out in the set's flat buffer (gaps zero).
std::vector<float> flat_of(const ParameterSet& set, const TensorsByName& tensors) {
  std::vector<float> flat(static_cast<size_t>(set.flat_values().numel()), 0.f);
  for (const ParameterInfo& p : set.parameters()) {
    const std::vector<double>& values = tensors.at(p.name);
    EXPECT_EQ(static_cast<int64_t>(values.size()), p.numel()) << p.name;
    for (int64_t i = 0; i < p.numel() && i < static_cast<int64_t>(values.size()); ++i)
      flat[static_cast<size_t>(p.offset + i)] = static_cast<float>(values[i]);
  }
  return flat;
}

// The largest |ours - torch's| / max(|torch's|, 1e-3) seen, printed at the end.
double worst_relative = 0;

// f32 with PyTorch's op order, but torch's vectorized CPU kernels fuse some multiply-adds
// (vec::fmadd) where ours may not: a few ulps after five steps.
void expect_close(const ParameterSet& set, const std::vector<float>& actual,
                  const TensorsByName& expected, const std::string& what, double relative) {
  for (const ParameterInfo& p : set.parameters()) {
    const std::vector<double>& want = expected.at(p.name);
    for (int64_t i = 0; i < p.numel(); ++i) {
      const double a = actual[static_cast<size_t>(p.offset + i)];
      worst_relative =
          std::max(worst_relative, std::abs(a - want[i]) / std::max(std::abs(want[i]), 1e-3));
      ASSERT_NEAR(a, want[i], 1e-7 + relative * std::abs(want[i]))
          << what << " " << p.name << "[" << i << "]";
    }
  }
}

AdamWConfig config_of(const OptimGoldenCase& c) {
  return {.lr = static_cast<float>(c.numbers[0]),
          .beta1 = static_cast<float>(c.numbers[1]),
          .beta2 = static_cast<float>(c.numbers[2]),
          .eps = static_cast<float>(c.numbers[3]),
          .weight_decay = static_cast<float>(c.numbers[4]),
          .decay_norm_and_bias = c.numbers[5] == 0};
}

// The rate of step k, as tools/make_optim_goldens.py sets it.
float lr_of_step(const OptimGoldenCase& c, int k) {
  return static_cast<float>(c.numbers[0] * (1 - 0.15 * k));
}

TEST(AdamW, MatchesTorchAdamW) {
  worst_relative = 0;
  int adamw_cases = 0;
  for (const OptimGoldenCase& c : testing::read_optim_golden()) {
    if (c.kind != "adamw") continue;
    ++adamw_cases;
    SCOPED_TRACE(c.name);
    Stream stream;
    ParameterSet set;
    register_tiny_model(set);
    set.allocate(Device::cpu(), stream);
    write_flat(set.flat_values(), flat_of(set, c.tensors.at("init")), stream);
    AdamW adamw(set, config_of(c), stream);
    EXPECT_EQ(adamw.runs().size() > 1, c.numbers[5] != 0 && c.numbers[4] != 0);
    const int steps = static_cast<int>(c.numbers[6]);
    for (int k = 0; k < steps; ++k) {
      write_flat(set.flat_grads(), flat_of(set, c.tensors.at("grad" + std::to_string(k))), stream);
      set.mark_grads_written();
      adamw.step(lr_of_step(c, k), stream);
    }
    EXPECT_EQ(adamw.steps(), steps);
    expect_close(set, set.flat_values().to_floats(stream), c.tensors.at("final"), "params", 1e-5);
    expect_close(set, adamw.exp_avg().to_floats(stream), c.tensors.at("exp_avg"), "exp_avg", 1e-5);
    expect_close(set, adamw.exp_avg_sq().to_floats(stream), c.tensors.at("exp_avg_sq"),
                 "exp_avg_sq", 1e-5);
  }
  EXPECT_GE(adamw_cases, 4);
  std::cout << "largest relative difference from torch.optim.AdamW: " << worst_relative << "\n";
}

TEST(GradClip, MatchesTorchClipGradNorm) {
  worst_relative = 0;
  int clip_cases = 0;
  for (const OptimGoldenCase& c : testing::read_optim_golden()) {
    if (c.kind != "clip") continue;
    ++clip_cases;
    SCOPED_TRACE(c.name);
    Stream stream;
    ParameterSet set;
    register_tiny_model(set);
    set.allocate(Device::cpu(), stream);
    write_flat(set.flat_grads(), flat_of(set, c.tensors.at("grad")), stream);
    set.mark_grads_written();
    GradClip clip(set, static_cast<float>(c.numbers[0]), stream);
    clip.clip(stream);
    // torch sums per-tensor f32 norms; ours is one double sum: an f32 rounding apart.
    EXPECT_NEAR(clip.last_norm(stream), c.numbers[1], 1e-6 * c.numbers[1]);
    expect_close(set, set.flat_grads().to_floats(stream), c.tensors.at("clipped"), "grads", 1e-6);
  }
  EXPECT_GE(clip_cases, 3);
  std::cout << "largest relative difference from clip_grad_norm_: " << worst_relative << "\n";
}

// Two steps, the state through the host (as a checkpoint holds it), two more: the resumed
// optimizer repeats the uninterrupted one bit for bit; reset() starts over.
TEST(AdamW, ResumesFromItsStateBitForBit) {
  Stream stream;
  const AdamWConfig config{.lr = 1e-2f, .weight_decay = 5e-2f, .decay_norm_and_bias = false};
  ParameterSet first, resumed;
  for (ParameterSet* set : {&first, &resumed})
    make_tiny_model(*set, Device::cpu(), 7, stream);
  AdamW running(first, config, stream);
  const auto step = [&](ParameterSet& set, AdamW& adamw, int k) {
    write_tiny_grads(set, 50 + static_cast<uint64_t>(k), stream);
    adamw.step(1e-2f * (1.f - 0.1f * static_cast<float>(k)), stream);
  };
  for (int k = 0; k < 2; ++k)
    step(first, running, k);
  write_flat(resumed.flat_values(), first.flat_values().to_floats(stream), stream);
  const OptimizerState state = saved_state(running, stream);
  AdamW loaded(resumed, config, stream);
  loaded.load_state(state, stream);
  EXPECT_EQ(loaded.steps(), 2);
  for (int k = 2; k < 4; ++k) {
    step(first, running, k);
    step(resumed, loaded, k);
  }
  EXPECT_EQ(first.flat_values().to_floats(stream), resumed.flat_values().to_floats(stream));
  EXPECT_EQ(running.exp_avg_sq().to_floats(stream), loaded.exp_avg_sq().to_floats(stream));
  running.reset(stream);
  EXPECT_FALSE(running.started());
  EXPECT_EQ(running.exp_avg().to_floats(stream), std::vector<float>(testing::kFlatSize, 0.f));
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << message << "' lacks '" << part << "'";
}

TEST(AdamW, ErrorsSayWhatIsWrong) {
  using engine::testing::error_of;
  Stream stream;
  ParameterSet set;
  register_tiny_model(set);
  set.allocate(Device::cpu(), stream);
  expect_contains(error_of([&] { AdamW(set, {.beta2 = 1.f}, stream); }), "betas must be in [0, 1)");
  expect_contains(error_of([&] { GradClip(set, 0.f, stream); }), "max_norm must be finite and > 0");
  expect_contains(error_of([&] { GradClip(set, INFINITY, stream); }), "max_norm must be finite");
  AdamW adamw(set, {}, stream);
  set.zero_grad();
  expect_contains(error_of([&] { adamw.step(0.1f, stream); }), "no gradients since zero_grad()");
  OptimizerState wrong{.started = true, .buffers = {}, .metadata = {{"steps", "3"}}};
  wrong.buffers["exp_avg"] = std::vector<float>(3);
  expect_contains(error_of([&] { adamw.load_state(wrong, stream); }),
                  "the exp_avg buffer has 3 elements, expected 176");
}

// AdamW's runs and GradClip's norm on the device (the sim device without a GPU) against the CPU.
TEST(AdamW, CudaMatchesCpu) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  const AdamWConfig config{.lr = 1e-2f, .weight_decay = 5e-2f, .decay_norm_and_bias = false};
  Stream host;
  Stream gpu(Device::cuda(0));
  ParameterSet cpu_set, gpu_set;
  make_tiny_model(cpu_set, Device::cpu(), 3, host);
  make_tiny_model(gpu_set, Device::cuda(0), 3, gpu);
  AdamW cpu_adamw(cpu_set, config, host), gpu_adamw(gpu_set, config, gpu);
  GradClip cpu_clip(cpu_set, 2.f, host), gpu_clip(gpu_set, 2.f, gpu);
  ASSERT_GT(gpu_adamw.runs().size(), 1u);
  for (int k = 0; k < 4; ++k) {
    write_tiny_grads(cpu_set, 30 + static_cast<uint64_t>(k), host);
    write_tiny_grads(gpu_set, 30 + static_cast<uint64_t>(k), gpu);
    cpu_clip.clip(host);
    gpu_clip.clip(gpu);
    EXPECT_NEAR(gpu_clip.last_norm(gpu), cpu_clip.last_norm(host), 1e-12);
    cpu_adamw.step(0.01f, host);
    gpu_adamw.step(0.01f, gpu);
  }
  const std::vector<float> expected = cpu_set.flat_values().to_floats(host);
  const std::vector<float> actual = gpu_set.flat_values().to_floats(gpu);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)  // nvcc may fuse multiply-adds: a few ulps
    ASSERT_NEAR(actual[i], expected[i], 1e-6 + 1e-5 * std::abs(expected[i])) << "element " << i;
}

}  // namespace
}  // namespace engine::nn
