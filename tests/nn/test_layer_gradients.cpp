// Every layer's backward against centered finite differences (caffe's gradient checker):
// the objective is f = sum(r * forward(x)) for a fixed random r, so backward(r) must give
// df/dx and the parameter gradients df/dp. Points within a step of a kink (ReLU, max-pool
// ties, anywhere in a block) show as one-sided differences that disagree, and are skipped.
// Tolerance: 2e-2 relative to max(|g|, rms of the gradient), as the differences of an fp32 forward
// allow at h = 1e-2.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <random>

#include "kernels/ops/activation.h"
#include "kernels/ops/copy.h"
#include "nn/activation_layers.h"
#include "nn/batchnorm2d.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/residual_block.h"

namespace engine::nn {
namespace {

constexpr double kStep = 2e-3;
constexpr double kTolerance = 2e-2;

std::vector<float> random_floats(int64_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v)
    x = uniform(rng);
  return v;
}

// y = relu(bn(x) + x): BatchNorm2d's residual input and its gradient, with x as both.
class BatchNormResidual final : public Layer {
 public:
  BatchNormResidual(ParameterSet& params, int64_t channels)
      : Layer("bn_residual"),
        bn_(params, "bn", BatchNormOptions{channels, 1e-5f, 0.1f, true, true}) {}
  std::string_view type() const override { return "BatchNormResidual"; }
  Shape setup(const Shape& input, const SetupContext& context) override {
    dx_ = Tensor::empty(input, context.dtype, context.device);
    return bn_.setup(input, context);
  }
  const Tensor& forward(const Tensor& x, Pass& pass) override { return bn_.forward(x, x, pass); }
  const Tensor& backward(const Tensor& dy, Pass& pass) override {
    add({.a = bn_.backward(dy, pass), .b = bn_.residual_grad(), .y = dx_}, pass.stream);
    return dx_;
  }
  BatchNorm2d& bn() { return bn_; }

 private:
  BatchNorm2d bn_;
  Tensor dx_;
};

struct Probe {
  ParameterSet params;
  std::unique_ptr<Layer> layer;
  std::function<void(Stream&)> after_allocate = [](Stream&) {};
};

double objective(Layer& layer, const Tensor& x, const std::vector<float>& r, Stream& stream) {
  Pass pass{stream, true, false, {}};
  const std::vector<float> y = layer.forward(x, pass).to_floats(stream);
  double f = 0;
  for (size_t i = 0; i < y.size(); ++i)
    f += double{y[i]} * r[i];
  return f;
}

// The centered difference at h/2; nullopt near a kink. A kink within a step shows either as
// centered differences at h and h/2 that disagree, or (a near-tie, where both are biased
// alike) as one-sided differences that disagree; a smooth function passes both, its
// centered differences agreeing to O(h^2) and its one-sided ones to about h f''.
std::optional<double> numeric_derivative(const std::function<double()>& f, float& value,
                                         double scale) {
  const float saved = value;
  const auto at = [&](double offset) {
    value = static_cast<float>(saved + offset);
    const double y = f();
    value = saved;
    return y;
  };
  const double center = f(), plus = at(kStep), minus = at(-kStep);
  const double half_plus = at(kStep / 2), half_minus = at(-kStep / 2);
  const double coarse = (plus - minus) / (2 * kStep), fine = (half_plus - half_minus) / kStep;
  const double forward = (half_plus - center) / (kStep / 2);
  const double backward = (center - half_minus) / (kStep / 2);
  const double size = std::max(std::abs(fine), scale);
  if (std::abs(coarse - fine) > 0.005 * size || std::abs(forward - backward) > 0.02 * size) {
    return std::nullopt;
  }
  return fine;
}

double rms(const std::vector<float>& values) {
  double sumsq = 0;
  for (float g : values)
    sumsq += double{g} * g;
  return std::sqrt(sumsq / static_cast<double>(std::max<size_t>(values.size(), 1)));
}

void expect_close_gradient(const std::string& what, const std::vector<float>& analytic,
                           const std::vector<std::optional<double>>& numeric) {
  double sumsq = 0;
  for (float g : analytic)
    sumsq += double{g} * g;
  const double scale = std::sqrt(sumsq / std::max<size_t>(analytic.size(), 1));
  int checked = 0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    if (!numeric[i]) continue;
    ++checked;
    EXPECT_NEAR(analytic[i], *numeric[i], kTolerance * std::max(std::abs(*numeric[i]), scale))
        << what << " element " << i;
  }
  EXPECT_GT(checked, static_cast<int>(numeric.size()) / 2) << what << ": too many kinks skipped";
}

// Checks dx and every parameter gradient of probe.layer for input shape `input`.
void check_gradients(Probe& probe, const Shape& input, uint32_t seed) {
  Stream stream;
  probe.params.allocate(Device::cpu(), stream);
  probe.after_allocate(stream);
  for (size_t id = 0; id < probe.params.parameters().size(); ++id) {
    Tensor v = probe.params.value(static_cast<ParameterId>(id));
    copy(Tensor::from_floats(v.shape(), random_floats(v.numel(), seed + 100 + id, 0.5f)), v,
         stream);
  }
  Layer& layer = *probe.layer;
  const Shape out = layer.setup(input, SetupContext{Device::cpu(), DType::f32, stream, true});
  Tensor x = Tensor::from_floats(input, random_floats(shape_numel(input), seed));
  const std::vector<float> r = random_floats(shape_numel(out), seed + 1);

  probe.params.zero_grad();
  Pass pass{stream, true, false, {}};
  layer.forward(x, pass);
  const std::vector<float> dx = layer.backward(Tensor::from_floats(out, r), pass).to_floats(stream);
  const auto f = [&] { return objective(layer, x, r, stream); };

  std::vector<std::optional<double>> numeric(dx.size());
  float* xs = x.data<float>();
  for (size_t i = 0; i < dx.size(); ++i)
    numeric[i] = numeric_derivative(f, xs[i], rms(dx));
  expect_close_gradient(std::string(layer.type()) + " dx", dx, numeric);

  for (size_t id = 0; id < probe.params.parameters().size(); ++id) {
    const auto pid = static_cast<ParameterId>(id);
    const std::vector<float> grad = probe.params.grad(pid).to_floats(stream);
    Tensor value = probe.params.value(pid);
    std::vector<std::optional<double>> num(grad.size());
    for (size_t i = 0; i < grad.size(); ++i)
      num[i] = numeric_derivative(f, value.data<float>()[i], rms(grad));
    expect_close_gradient(probe.params.info(pid).name, grad, num);
  }
}

TEST(LayerGradients, Conv2dWithBiasStrideAndPadding) {
  Probe probe;
  probe.layer = std::make_unique<Conv2d>(probe.params, "conv", Conv2dOptions{3, 4, 3, 2, 1, true});
  check_gradients(probe, {2, 5, 6, 3}, 1);
}

TEST(LayerGradients, PointwiseConv2d) {
  Probe probe;
  probe.layer = std::make_unique<Conv2d>(probe.params, "conv", Conv2dOptions{6, 4, 1, 1, 0});
  check_gradients(probe, {2, 3, 4, 6}, 11);
}

TEST(LayerGradients, Linear) {
  Probe probe;
  probe.layer = std::make_unique<Linear>(probe.params, "fc", 7, 5);
  check_gradients(probe, {3, 7}, 2);
}

TEST(LayerGradients, BatchNormPlainAndFusedReLU) {
  for (bool relu : {false, true}) {
    Probe probe;
    auto bn =
        std::make_unique<BatchNorm2d>(probe.params, "bn", BatchNormOptions{5, 1e-5f, 0.1f, relu});
    BatchNorm2d* raw = bn.get();
    probe.after_allocate = [raw](Stream& s) { raw->reset_state(s); };
    probe.layer = std::move(bn);
    check_gradients(probe, {2, 3, 2, 5}, 3);
  }
}

TEST(LayerGradients, BatchNormResidualAndReLU) {
  Probe probe;
  probe.layer = std::make_unique<BatchNormResidual>(probe.params, 4);
  check_gradients(probe, {3, 2, 2, 4}, 4);
}

TEST(LayerGradients, ReLUMaxPoolAndAveragePool) {
  Probe relu;
  relu.layer = std::make_unique<ReLU>("relu");
  check_gradients(relu, {2, 3, 3, 4}, 5);
  Probe pool;
  pool.layer = std::make_unique<MaxPool2d>("maxpool", MaxPool2dParams{3, 2, 1});
  check_gradients(pool, {2, 7, 6, 3}, 6);
  Probe avg;
  avg.layer = std::make_unique<GlobalAvgPool>("avgpool");
  check_gradients(avg, {2, 3, 4, 5}, 7);
}

TEST(LayerGradients, BasicBlockWithDownsampleAndBottleneck) {
  Probe basic;
  basic.layer = make_basic_block(basic.params, "block", 4, 6, 2);
  check_gradients(basic, {2, 6, 6, 4}, 8);
  Probe bottleneck;
  bottleneck.layer = make_bottleneck(bottleneck.params, "block", 16, 4, 1);  // identity: 16 = 4 * 4
  check_gradients(bottleneck, {2, 3, 3, 16}, 9);
}

}  // namespace
}  // namespace engine::nn
