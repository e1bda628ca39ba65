// The op harness: every case of op_cases.h on every device present, in three modes, as
// GoogleTest tests named <Mode>/<op>_<dtype>_<case>_<device>:
//   Check     the device against the CPU backend, within the case's tolerance
//   Gradient  the op's backward against central finite differences of its forward, on each
//             device (f32 cases of differentiable ops)
//   Perf      the median time of the op on each device (ENGINE_OPS_PERF=1; skipped otherwise)
// Filter by op, dtype or device with --gtest_filter, e.g. '*conv2d_forward*f32*cuda*'. A case
// a device cannot run reports "not supported: <why>" as its skip reason; a case over an
// emulated device's size cap is skipped so, naming the cap. ENGINE_OPS_PERTURB=REL scales the
// non-reference results by (1 + REL): a planted error the harness must catch (ctest
// ops_harness_catches_*).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "bench/resnet_layers.h"
#include "close_values.h"
#include "kernels/ops.h"
#include "kernels/runtime.h"
#include "op_cases.h"

namespace engine::ops_harness {
namespace {

const std::vector<OpCase>& cases() {
  static const std::vector<OpCase> all = all_op_cases(case_config_from_env());
  return all;
}

struct Param {
  size_t index;
  std::string device;  // "cpu" or "cuda"
};

void PrintTo(const Param& param, std::ostream* os) {
  *os << cases()[param.index].id() << " on " << param.device;
}

std::string test_name(const ::testing::TestParamInfo<Param>& info) {
  std::string name = cases()[info.param.index].id() + "_" + info.param.device;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

// Every case on each device; with only_differentiable, the cases that have a backward (a
// mode that does not apply to an op is no test, not a skip).
std::vector<Param> params(const std::vector<std::string>& devices,
                          bool only_differentiable = false) {
  std::vector<Param> all;
  for (size_t i = 0; i < cases().size(); ++i) {
    if (only_differentiable && !cases()[i].differentiables) continue;
    for (const std::string& device : devices)
      all.push_back({i, device});
  }
  return all;
}

double perturbation() {
  const char* value = std::getenv("ENGINE_OPS_PERTURB");
  return value != nullptr ? std::atof(value) : 0.0;
}

template <typename T>
void perturb(std::vector<T>& values) {
  const double rel = perturbation();
  if (rel == 0) return;
  for (T& v : values)
    v = static_cast<T>(v * (1.0 + rel) + rel);
}

// Where a case cannot run, why ("" where it can). The sim device runs every kernel under the
// SIMT emulator, thousands of times slower than a GPU: it takes cases up to a cap.
std::string cannot_run(const OpCase& c, const std::string& device, int64_t emulated_cap) {
  if (device == "cpu") return "";
  if (cuda_device_count() == 0)
    return "not supported: no usable CUDA device: " + cuda_unavailable_reason();
#if ENGINE_SIM_DEVICE
  if (c.elements > emulated_cap) {
    return "skipped: " + std::to_string(c.elements) + " elements, over the sim device's cap of " +
           std::to_string(emulated_cap) + " (ENGINE_OPS_SIM_CAP)";
  }
#else
  (void)c;
  (void)emulated_cap;
#endif
  return "";
}

int64_t sim_cap(int64_t fallback) {
  const char* value = std::getenv("ENGINE_OPS_SIM_CAP");
  return value != nullptr ? std::atoll(value) : fallback;
}

Stream make_stream(const std::string& device) {
  return device == "cpu" ? Stream() : Stream(Device::cuda(0));
}

std::vector<Output> run(const OpCase& c, Stream& stream) {
  Prepared prepared = c.prepare(stream, op_registry::Inputs::seeded);
  prepared.call();
  return prepared.outputs();
}

// ---------------------------------------------------------------------------------------

class Check : public ::testing::TestWithParam<Param> {};

TEST_P(Check, MatchesCpu) {
  const OpCase& c = cases()[GetParam().index];
  const std::string why = cannot_run(c, GetParam().device, sim_cap(1 << 16));
  if (!why.empty()) GTEST_SKIP() << why;
  Stream cpu;
  Stream device = make_stream(GetParam().device);
  device.set_fp32_math(c.fp32_math);
  const std::vector<Output> expected = run(c, cpu);
  std::vector<Output> actual = run(c, device);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    perturb(actual[i].values);
    const Output& e = expected[i];
    const double tolerance = e.tolerance >= 0 ? e.tolerance : c.tolerance;
    EXPECT_TRUE(testing::all_close(e.values, actual[i].values, tolerance, e.scale))
        << e.name << " (tolerance " << tolerance << ": " << c.why << ")";
  }
}

// Only the CUDA device is checked against the CPU, which is the reference.
INSTANTIATE_TEST_SUITE_P(Ops, Check, ::testing::ValuesIn(params({"cuda"})), test_name);

// ---------------------------------------------------------------------------------------

// Central differences of the loss at a few elements of each input, against the backward's
// gradient there. The step is 1e-2 of the element's scale; the forward's fp32 rounding over the
// probe's sum and the curvature of BatchNorm and softmax keep the quotient within ~1e-3 of the
// derivative here, so 2e-2 of max(|gradient|, its RMS) fails a wrong backward (a factor, a
// sign, a missing term) and passes a right one.
constexpr int kSamples = 6;
constexpr double kStep = 1e-2;
constexpr double kGradientTolerance = 2e-2;

class Gradient : public ::testing::TestWithParam<Param> {};

TEST_P(Gradient, MatchesFiniteDifferences) {
  const OpCase& c = cases()[GetParam().index];
  const std::string why = cannot_run(c, GetParam().device, sim_cap(1 << 16));
  if (!why.empty()) GTEST_SKIP() << why;
  Stream stream = make_stream(GetParam().device);
  for (const Differentiable& d : c.differentiables()) {
    std::vector<float> analytic = d.gradient(stream);
    perturb(analytic);
    ASSERT_EQ(analytic.size(), d.point.size()) << d.input;
    const double scale = testing::rms(testing::to_double(analytic));
    const size_t n = d.point.size();
    for (int s = 0; s < kSamples; ++s) {
      // Spread over the tensor, first and last included.
      const size_t i = kSamples == 1 ? 0 : s * (n - 1) / (kSamples - 1);
      const double step = kStep * std::max(1.0, std::abs(static_cast<double>(d.point[i])));
      std::vector<float> plus = d.point, minus = d.point;
      plus[i] = static_cast<float>(d.point[i] + step);
      minus[i] = static_cast<float>(d.point[i] - step);
      const double actual_step = static_cast<double>(plus[i]) - minus[i];
      const double numeric = (d.loss(stream, plus) - d.loss(stream, minus)) / actual_step;
      const double bound = kGradientTolerance * std::max(std::abs(numeric), scale);
      EXPECT_LE(std::abs(analytic[i] - numeric), bound)
          << d.input << "[" << i << "]: backward " << analytic[i] << ", finite differences "
          << numeric;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Gradient, ::testing::ValuesIn(params({"cpu", "cuda"}, true)),
                         test_name);

// The layers' forward and input-gradient passes split K on a CUDA device where the output
// has too few tiles to fill it, with the workspaces the layers pass (the Check cases pass them
// too): some layers must, or the split path would go unchecked.
TEST(OpsCuda, SomeConvolutionsSplitK) {
  if (cuda_device_count() == 0) {
    GTEST_SKIP() << "not supported: no usable CUDA device: " << cuda_unavailable_reason();
  }
  const CaseConfig config = case_config_from_env();
  int forwards = 0, input_gradients = 0;
  for (const bench::ConvLayer& layer :
       bench::resnet_conv_layers(config.arch, config.batch, config.image_size)) {
    forwards += conv2d_forward_workspace_numel(layer.shape, Device::cuda(0)) > 0;
    input_gradients += conv2d_backward_data_workspace_numel(layer.shape, Device::cuda(0)) > 0;
  }
  EXPECT_GT(forwards, 0);
  EXPECT_GT(input_gradients, 0);
}

// ---------------------------------------------------------------------------------------

class Perf : public ::testing::TestWithParam<Param> {};

TEST_P(Perf, MedianTime) {
  if (std::getenv("ENGINE_OPS_PERF") == nullptr)
    GTEST_SKIP() << "perf mode is off (ENGINE_OPS_PERF=1)";
  const OpCase& c = cases()[GetParam().index];
  const std::string why = cannot_run(c, GetParam().device, sim_cap(1 << 16));
  if (!why.empty()) GTEST_SKIP() << why;
  Stream stream = make_stream(GetParam().device);
  stream.set_fp32_math(c.fp32_math);
  Prepared prepared = c.prepare(stream, op_registry::Inputs::seeded);
  prepared.call();  // warm: first-touch allocations, caches, lazy module loads
  stream.synchronize();
  std::vector<double> times;
  for (int rep = 0; rep < 7; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    prepared.call();
    stream.synchronize();
    times.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  std::printf("[ perf     ] %-8s %-6s %10.1f us  %s %s\n", GetParam().device.c_str(),
              std::string(dtype_name(c.dtype)).c_str(), times[times.size() / 2],
              std::string(op_registry::op_name(c.op)).c_str(), c.name.c_str());
}

INSTANTIATE_TEST_SUITE_P(Ops, Perf, ::testing::ValuesIn(params({"cpu", "cuda"})), test_name);

}  // namespace
}  // namespace engine::ops_harness
