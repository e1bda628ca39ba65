// nn::Sgd against a double-precision torch.optim.SGD over a small ParameterSet with every
// parameter kind and alignment gaps: momentum, dampening, nesterov, weight decay with and
// without norm and bias parameters, grad_scale, reset, checkpoint resume, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/error.h"
#include "kernels/ops/copy.h"
#include "kernels/runtime.h"
#include "nn/sgd.h"
#include "tests/error_text.h"
#include "tests/nn/tiny_parameters.h"

namespace engine::nn {
namespace {

using testing::flat_pattern;
using testing::kFlatSize;
using testing::make_tiny_model;
using testing::register_tiny_model;
using testing::write_flat;
using testing::write_tiny_grads;

// torch.optim.SGD's step in double, per element; buffer empty = PyTorch's "buf is None".
struct ReferenceSgd {
  SgdConfig config;
  std::vector<double> momentum;  // empty until the first step

  void step(const ParameterSet& set, std::vector<double>& values, const std::vector<float>& grads,
            double lr, double grad_scale) {
    const bool first = momentum.empty();
    if (first) momentum.assign(values.size(), 0.0);
    for (const ParameterInfo& p : set.parameters()) {
      const bool decays = config.decay_norm_and_bias || !is_norm_or_bias(p.kind);
      for (int64_t i = p.offset; i < p.offset + p.numel(); ++i) {
        const size_t k = static_cast<size_t>(i);
        double g = grads[k] * grad_scale;
        if (decays) g += double(config.weight_decay) * values[k];
        if (config.momentum != 0.f) {
          momentum[k] =
              first ? g
                    : double(config.momentum) * momentum[k] + (1.0 - double(config.dampening)) * g;
          g = config.nesterov ? g + double(config.momentum) * momentum[k] : momentum[k];
        }
        values[k] -= lr * g;
      }
    }
  }
};

struct SgdCase {
  std::string name;
  SgdConfig config;
  float grad_scale = 1.f;
};

std::vector<SgdCase> sgd_cases() {
  SgdConfig plain, momentum, damped, nesterov, decay_all, nesterov_conv_decay, damped_conv_decay,
      decay_only;
  momentum.momentum = 0.9f;
  damped = momentum;
  damped.dampening = 0.1f;
  nesterov = momentum;
  nesterov.nesterov = true;
  decay_all = momentum;
  decay_all.weight_decay = 1e-2f;
  nesterov_conv_decay = nesterov;
  nesterov_conv_decay.weight_decay = 5e-2f;
  nesterov_conv_decay.decay_norm_and_bias = false;
  damped_conv_decay = damped;
  damped_conv_decay.dampening = 0.5f;
  damped_conv_decay.weight_decay = 5e-2f;
  damped_conv_decay.decay_norm_and_bias = false;
  decay_only.weight_decay = 0.1f;
  decay_only.decay_norm_and_bias = false;
  return {{"plain", plain},
          {"momentum", momentum},
          {"dampening", damped},
          {"nesterov", nesterov},
          {"weight_decay_everywhere", decay_all},
          {"nesterov_no_decay_on_norm_and_bias", nesterov_conv_decay},
          {"dampening_no_decay_on_norm_and_bias_scaled", damped_conv_decay, 0.25f},
          {"decay_only_no_decay_on_norm_and_bias", decay_only, 2.f}};
}

// The rate of step k, as a schedule would change it.
float lr_of_step(int k) {
  return 0.1f * (1.f - 0.15f * static_cast<float>(k));
}

void expect_matches(const ParameterSet& set, const std::vector<float>& actual,
                    const std::vector<double>& expected, const std::string& what) {
  std::vector<bool> inside(actual.size(), false);
  for (const ParameterInfo& p : set.parameters())
    for (int64_t i = p.offset; i < p.offset + p.numel(); ++i)
      inside[static_cast<size_t>(i)] = true;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!inside[i]) {
      ASSERT_EQ(actual[i], 0.f) << what << ": the alignment gap element " << i << " changed";
      continue;
    }
    ASSERT_NEAR(actual[i], expected[i], 1e-6 + 1e-5 * std::abs(expected[i]))
        << what << " element " << i;
  }
}

// Runs `steps` steps of nn::Sgd and of the reference from the same values and gradients.
void run_against_reference(const SgdCase& c, int steps, bool reset_midway) {
  Stream stream;
  ParameterSet set;
  register_tiny_model(set);
  set.allocate(Device::cpu(), stream);
  const std::vector<float> initial = flat_pattern(set, 1);
  write_flat(set.flat_values(), initial, stream);
  std::vector<double> expected(initial.begin(), initial.end());
  Sgd sgd(set, c.config, stream);
  ReferenceSgd reference{c.config, {}};
  EXPECT_FALSE(sgd.started());
  for (int k = 0; k < steps; ++k) {
    if (reset_midway && k == steps / 2) {
      sgd.reset(stream);
      reference.momentum.clear();
      EXPECT_FALSE(sgd.started());
    }
    const std::vector<float> grads = flat_pattern(set, 100 + static_cast<uint64_t>(k));
    write_flat(set.flat_grads(), grads, stream);
    set.mark_grads_written();
    sgd.step(lr_of_step(k), stream, c.grad_scale);
    EXPECT_TRUE(sgd.started());
    reference.step(set, expected, grads, lr_of_step(k), c.grad_scale);
    expect_matches(set, set.flat_values().to_floats(stream), expected,
                   "values after step " + std::to_string(k));
    if (c.config.momentum != 0.f) {
      expect_matches(set, sgd.momentum_buffer().to_floats(stream), reference.momentum,
                     "momentum buffer after step " + std::to_string(k));
    } else {
      EXPECT_FALSE(sgd.momentum_buffer().defined());  // torch keeps no buffer either
    }
  }
}

TEST(Sgd, MatchesTorchSgdInDoublePrecision) {
  for (const SgdCase& c : sgd_cases()) {
    SCOPED_TRACE(c.name);
    run_against_reference(c, 5, false);
  }
}

TEST(Sgd, ResetStartsTheMomentumAgain) {
  for (const SgdCase& c : sgd_cases()) {
    SCOPED_TRACE(c.name);
    run_against_reference(c, 6, true);
  }
}

TEST(Sgd, OneRunUnlessNormAndBiasSkipDecay) {
  Stream stream;
  ParameterSet set;
  register_tiny_model(set);
  set.allocate(Device::cpu(), stream);
  ASSERT_EQ(set.flat_values().numel(), kFlatSize);
  SgdConfig config;
  config.weight_decay = 1e-4f;
  const Sgd everywhere(set, config, stream);
  ASSERT_EQ(everywhere.run_count(), 1);
  EXPECT_EQ(everywhere.runs()[0].numel, kFlatSize);
  config.decay_norm_and_bias = false;
  const Sgd split(set, config, stream);
  // fc.bias | fc.weight | conv2.bias | conv2.weight | bn1.bias + bn1.weight | conv1.weight,
  // each run reaching the next parameter's offset (the gaps go with the run before them).
  const std::vector<SgdRun> expected = {{0, 16, false}, {16, 32, true},   {48, 16, false},
                                        {64, 64, true}, {128, 32, false}, {160, 16, true}};
  ASSERT_EQ(split.run_count(), static_cast<int>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(split.runs()[i].offset, expected[i].offset) << "run " << i;
    EXPECT_EQ(split.runs()[i].numel, expected[i].numel) << "run " << i;
    EXPECT_EQ(split.runs()[i].weight_decay, expected[i].weight_decay) << "run " << i;
  }
  config.weight_decay = 0.f;  // nothing to exclude: one call again
  EXPECT_EQ(Sgd(set, config, stream).run_count(), 1);
}

TEST(Sgd, ResumesFromItsStateBitForBit) {
  Stream stream;
  SgdConfig config;
  config.momentum = 0.9f;
  config.dampening = 0.2f;
  config.weight_decay = 1e-2f;
  config.decay_norm_and_bias = false;
  ParameterSet first, resumed, fresh;
  for (ParameterSet* set : {&first, &resumed, &fresh}) {
    register_tiny_model(*set);
    set->allocate(Device::cpu(), stream);
    write_flat(set->flat_values(), flat_pattern(*set, 7), stream);
  }
  Sgd running(first, config, stream);
  const auto step = [&](ParameterSet& set, Sgd& sgd, int k) {
    write_tiny_grads(set, 50 + static_cast<uint64_t>(k), stream);
    sgd.step(lr_of_step(k), stream);
  };
  for (int k = 0; k < 2; ++k)
    step(first, running, k);
  // The checkpoint: values and the optimizer's state, through the host.
  write_flat(resumed.flat_values(), first.flat_values().to_floats(stream), stream);
  write_flat(fresh.flat_values(), first.flat_values().to_floats(stream), stream);
  const Tensor saved =
      Tensor::from_floats({kFlatSize}, running.momentum_buffer().to_floats(stream));
  Sgd loaded(resumed, config, stream);
  loaded.load_state(saved, running.started(), stream);
  EXPECT_TRUE(loaded.started());
  Sgd restarted(fresh, config, stream);
  restarted.load_state(Tensor(), false, stream);  // a checkpoint written before any step
  for (int k = 2; k < 4; ++k) {
    step(first, running, k);
    step(resumed, loaded, k);
    step(fresh, restarted, k);
  }
  EXPECT_EQ(first.flat_values().to_floats(stream), resumed.flat_values().to_floats(stream));
  EXPECT_EQ(running.momentum_buffer().to_floats(stream),
            loaded.momentum_buffer().to_floats(stream));
  // Without the state the momentum starts over (dampening makes the first step differ).
  EXPECT_NE(first.flat_values().to_floats(stream), fresh.flat_values().to_floats(stream));
}

using engine::testing::error_of;

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << message << "' lacks '" << part << "'";
}

TEST(Sgd, ErrorsSayWhatIsWrong) {
  Stream stream;
  ParameterSet unallocated;
  register_tiny_model(unallocated);
  expect_contains(error_of([&] { Sgd(unallocated, SgdConfig{}, stream); }), "not allocated");

  ParameterSet set;
  register_tiny_model(set);
  set.allocate(Device::cpu(), stream);
  SgdConfig nesterov_alone;
  nesterov_alone.nesterov = true;
  expect_contains(error_of([&] { Sgd(set, nesterov_alone, stream); }),
                  "nesterov momentum requires a momentum > 0 and zero dampening");
  SgdConfig nesterov_damped = nesterov_alone;
  nesterov_damped.momentum = 0.9f;
  nesterov_damped.dampening = 0.1f;
  expect_contains(error_of([&] { Sgd(set, nesterov_damped, stream); }), "dampening 0.1");
  SgdConfig negative_decay;
  negative_decay.weight_decay = -1e-4f;
  expect_contains(error_of([&] { Sgd(set, negative_decay, stream); }), "weight_decay must be >= 0");

  SgdConfig config;
  config.momentum = 0.9f;
  Sgd sgd(set, config, stream);
  set.zero_grad();
  expect_contains(error_of([&] { sgd.step(0.1f, stream); }), "no gradients since zero_grad()");
  expect_contains(error_of([&] {
                    sgd.load_state(Tensor::from_floats({3}, {1, 2, 3}), true, stream);
                  }),
                  "expected f32 with 176 elements");
  EXPECT_FALSE(sgd.started());
}

TEST(Sgd, CudaMatchesCpu) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  const SgdCase c = sgd_cases()[6];  // dampening, conv-only decay, grad_scale: several runs
  Stream host;
  Stream gpu(Device::cuda(0));
  ParameterSet cpu_set, gpu_set;
  make_tiny_model(cpu_set, Device::cpu(), 3, host);
  make_tiny_model(gpu_set, Device::cuda(0), 3, gpu);
  Sgd cpu_sgd(cpu_set, c.config, host), gpu_sgd(gpu_set, c.config, gpu);
  ASSERT_GT(gpu_sgd.run_count(), 1);
  // The GPU's step also writes a bf16 copy of what it updates (the op casts after the kernel).
  ComputeWeightCopy copy;
  copy.prepare(gpu_set, DType::bf16);
  gpu_sgd.write_compute_copy(&copy);
  for (int k = 0; k < 4; ++k) {
    write_tiny_grads(cpu_set, 30 + static_cast<uint64_t>(k), host);
    write_tiny_grads(gpu_set, 30 + static_cast<uint64_t>(k), gpu);
    cpu_sgd.step(lr_of_step(k), host, c.grad_scale);
    gpu_sgd.step(lr_of_step(k), gpu, c.grad_scale);
  }
  const std::vector<float> expected = cpu_set.flat_values().to_floats(host);
  const std::vector<float> actual = gpu_set.flat_values().to_floats(gpu);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)  // nvcc may fuse multiply-adds: a few ulps
    ASSERT_NEAR(actual[i], expected[i], 1e-6 + 1e-5 * std::abs(expected[i])) << "element " << i;
  Tensor cast_values = Tensor::empty(copy.flat().shape(), DType::bf16, Device::cuda(0));
  cast(std::as_const(gpu_set).flat_values(), cast_values, gpu);
  EXPECT_EQ(copy.flat().to_floats(gpu), cast_values.to_floats(gpu));
}

}  // namespace
}  // namespace engine::nn
