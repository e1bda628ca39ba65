// The op harness's BatchNorm cases: the training forward's phases, the backward, the
// evaluation forward, and SyncBN's fp64 sums.
#include "case_helpers.h"

#include <cmath>

#include "kernels/ops.h"

namespace engine::ops_harness {

using testing::normal_values;

namespace {

struct BnTensors {
  Tensor x, weight, bias, running_mean, running_var, stats, sums, batch_stats, workspace, y;
};

// The training forward on `x` (already on the stream's device), with the epilogue a residual
// block's last BatchNorm fuses (residual add and ReLU) when `epilogue` has them.
BnTensors bn_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Stream& stream,
                     const BatchNormEpilogue& epilogue = {}) {
  const int64_t c = x.size(3);
  const Device device = stream.device();
  BnTensors t;
  t.x = x;
  t.weight = weight;
  t.bias = bias;
  t.running_mean = Tensor::zeros({c}, DType::f32, device, stream);
  t.running_var = Tensor::zeros({c}, DType::f32, device, stream);
  fill(t.running_var, 1.f, stream);
  t.stats = Tensor::empty({batchnorm_stats_numel(c)}, DType::f32, device);
  t.sums = Tensor::empty({batchnorm_stats_numel(c)}, DType::f64, device);
  t.batch_stats = Tensor::empty({batchnorm_stats_numel(c)}, DType::f32, device);
  t.workspace = workspace(batchnorm_workspace_numel(x), stream);
  t.y = Tensor::empty(x.shape(), x.dtype(), device);
  batchnorm_stats(x, t.stats, t.workspace, stream);
  batchnorm_stats_to_sums(t.stats, t.sums, stream);
  batchnorm_finalize_sums(t.sums, t.running_mean, t.running_var, 0.1f, 1e-5f, t.batch_stats,
                          stream);
  batchnorm_normalize(x, t.batch_stats, weight, bias, t.y, stream, epilogue);
  return t;
}

// The first `channels` values (the means of a [2C+1] statistics vector) and the rest.
std::vector<double> head(const std::vector<double>& v, int64_t channels) {
  return {v.begin(), v.begin() + channels};
}
std::vector<double> tail(const std::vector<double>& v, int64_t channels) {
  return {v.begin() + channels, v.end()};
}

// mean: of x (std 2 at 0.5; std 1 far from zero, as a network's un-normalized inputs). The
// outputs' tolerances: means to 1e-6 of |mean| + std (fp32's rounding of them in another
// summation order), variances, invstd and gradient sums to 1e-5 relative, activations to the
// case's. Far from zero, y, the gradient sums and dx to 2e-4: the two sides' fp32 batch means
// may differ by an ulp (6e-5 of the std at 1e3), which shifts every normalized value.
constexpr double kFarMean = 2e-4;

}  // namespace

void add_batchnorm_cases(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype,
                         double mean) {
  const Shape shape = c.dims;
  const int64_t channels = shape[3];
  const bool far = mean > 10;
  const double std = far ? 1.0 : 2.0;
  const double mean_scale = std::abs(mean) + std;
  const auto x = HostTensor(shape, dtype, 21, mean, std);
  const auto dy = HostTensor(shape, dtype, 22);
  const auto weight = HostTensor({channels}, DType::f32, 23, 1.0, 0.5);
  const auto bias = HostTensor({channels}, DType::f32, 24);
  const double tolerance = dtype == DType::bf16 ? kBf16 : kReduceF32;
  const std::string why = dtype == DType::bf16 ? kBf16Why : kReduceF32Why;
  const std::string name =
      far ? c.name + " at mean " + std::to_string(static_cast<int>(mean)) : c.name;
  OpCase bn{c.op, name, dtype, tolerance, why, shape_numel(shape), nullptr, nullptr};
  if (c.op == "bn_forward") {
    // The forward with a residual block's fused residual add and ReLU, then the evaluation
    // forward with the running statistics it updated.
    bn.prepare = [=](Stream& stream) {
      auto t = std::make_shared<BnTensors>();
      auto in = std::make_shared<Tensor>(on_device(*x, stream));
      auto w = std::make_shared<Tensor>(on_device(*weight, stream));
      auto b = std::make_shared<Tensor>(on_device(*bias, stream));
      auto residual = std::make_shared<Tensor>(on_device(*dy, stream));
      auto y_eval = std::make_shared<Tensor>(Tensor::empty(shape, dtype, stream.device()));
      return Prepared{
          [=, &stream] {
            *t = bn_forward(*in, *w, *b, stream, BatchNormEpilogue{*residual, true});
            batchnorm_eval_forward(*in, t->running_mean, t->running_var, *w, *b, 1e-5f, *y_eval,
                                   stream);
          },
          [=, &stream] {
            const std::vector<double> stats = host_values(t->batch_stats, stream);
            const double act = far ? std::max(tolerance, kFarMean) : -1;
            return std::vector<Output>{
                {"y (+ residual, ReLU)", host_values(t->y, stream), act},
                {"y_eval", host_values(*y_eval, stream), act},
                {"batch mean", head(stats, channels), 1e-6, mean_scale},
                {"batch invstd and count", tail(stats, channels), kReduceF32},
                {"running_mean", host_values(t->running_mean, stream), 1e-6, mean_scale},
                {"running_var", host_values(t->running_var, stream), kReduceF32}};
          }};
    };
    if (dtype == DType::f32 && !far) {
      bn.differentiables = [=] {
        Stream host;
        const std::vector<float> probe = dy->to_floats(host);
        // Gradients of <y, probe> from the backward phases, on the stream's device.
        auto backward = [=](Stream& stream) {
          Tensor in = on_device(*x, stream), w = on_device(*weight, stream);
          BnTensors t = bn_forward(in, w, on_device(*bias, stream), stream);
          Tensor grad = on_device(*dy, stream);
          Tensor grad_sums = Tensor::empty({2 * channels}, DType::f32, stream.device());
          batchnorm_backward_reduce(grad, in, t.batch_stats, grad_sums, t.workspace, stream);
          Tensor dx = Tensor::empty(shape, dtype, stream.device());
          batchnorm_backward_elementwise(grad, in, t.batch_stats, w, grad_sums, dx, stream);
          // grad_sums = (sum dy, sum dy * xhat): the bias and weight gradients.
          std::vector<float> sums = grad_sums.to_floats(stream);
          return std::vector<std::vector<float>>{dx.to_floats(stream),
                                                 {sums.begin() + channels, sums.end()},
                                                 {sums.begin(), sums.begin() + channels}};
        };
        auto loss = [=](Stream& stream, const Tensor& in, const Tensor& w, const Tensor& b) {
          BnTensors t =
              bn_forward(on_device(in, stream), on_device(w, stream), on_device(b, stream), stream);
          return probed(t.y, probe, stream);
        };
        return std::vector<Differentiable>{
            {"x", x->to_floats(host),
             [=](Stream& stream, const std::vector<float>& point) {
               return loss(stream, Tensor::from_floats(shape, point), *weight, *bias);
             },
             [=](Stream& stream) { return backward(stream)[0]; }},
            {"weight", weight->to_floats(host),
             [=](Stream& stream, const std::vector<float>& point) {
               return loss(stream, *x, Tensor::from_floats({channels}, point), *bias);
             },
             [=](Stream& stream) { return backward(stream)[1]; }},
            {"bias", bias->to_floats(host),
             [=](Stream& stream, const std::vector<float>& point) {
               return loss(stream, *x, *weight, Tensor::from_floats({channels}, point));
             },
             [=](Stream& stream) { return backward(stream)[2]; }}};
      };
    }
  } else {  // bn_backward: after the same forward on the device
    bn.prepare = [=](Stream& stream) {
      auto t = std::make_shared<BnTensors>(bn_forward(
          on_device(*x, stream), on_device(*weight, stream), on_device(*bias, stream), stream));
      auto grad = std::make_shared<Tensor>(on_device(*dy, stream));
      auto grad_sums =
          std::make_shared<Tensor>(Tensor::empty({2 * channels}, DType::f32, stream.device()));
      auto dx = std::make_shared<Tensor>(Tensor::empty(shape, dtype, stream.device()));
      return Prepared{
          [=, &stream] {
            batchnorm_backward_reduce(*grad, t->x, t->batch_stats, *grad_sums, t->workspace,
                                      stream);
            batchnorm_backward_elementwise(*grad, t->x, t->batch_stats, t->weight, *grad_sums, *dx,
                                           stream);
          },
          [=, &stream] {
            return std::vector<Output>{
                {"grad_sums", host_values(*grad_sums, stream), far ? kFarMean : kReduceF32},
                {"dx", host_values(*dx, stream), far ? std::max(tolerance, kFarMean) : -1}};
          }};
    };
  }
  cases.push_back(bn);
}

// SyncBN's fp64 phases: a layer's f32 statistics (mean, m2, count) -> f64 sums, and three
// ranks' summed sums -> the batch and running statistics. Their arithmetic is shared with the
// CPU twin (kernels/batchnorm_sums.h), so the device must give the same bits, at a mean far
// from zero too (where fp32 sums would lose the variance).
void add_bn_sums_case(std::vector<OpCase>& cases, const std::string& prefix, int64_t channels,
                      double mean) {
  std::vector<float> stats(static_cast<size_t>(2 * channels + 1));
  const std::vector<float> means = normal_values(channels, 25, DType::f32, mean, 1.0);
  const std::vector<float> m2 = normal_values(channels, 26, DType::f32, 300.0, 10.0);
  for (int64_t i = 0; i < channels; ++i) {
    stats[i] = means[i];
    stats[channels + i] = m2[i];
  }
  stats[2 * channels] = 299.f;
  const auto host_stats = std::make_shared<Tensor>(Tensor::from_floats({2 * channels + 1}, stats));
  const auto running_mean = std::make_shared<Tensor>(
      Tensor::from_floats({channels}, normal_values(channels, 27, DType::f32)));
  OpCase op{"bn_sums",
            prefix + " C " + std::to_string(channels) + " at mean " +
                std::to_string(static_cast<int>(mean)),
            DType::f32,
            kExact,
            "the same fp64 expressions on both sides (kernels/batchnorm_sums.h): the same bits",
            2 * channels + 1,
            nullptr,
            nullptr};
  op.prepare = [=](Stream& stream) {
    const Device device = stream.device();
    auto t = std::make_shared<BnTensors>();
    t->stats = on_device(*host_stats, stream);
    t->sums = Tensor::empty({2 * channels + 1}, DType::f64, device);
    t->batch_stats = Tensor::empty({2 * channels + 1}, DType::f32, device);
    t->running_mean = on_device(*running_mean, stream);
    t->running_var = Tensor::zeros({channels}, DType::f32, device, stream);
    fill(t->running_var, 1.5f, stream);
    return Prepared{
        [=, &stream] {
          batchnorm_stats_to_sums(t->stats, t->sums, stream);
          // Three ranks' sums (this one's, half of it, and it again), as an
          // all-reduce would leave them: exact in f64.
          std::vector<double> sums = t->sums.to_doubles(stream);
          for (double& v : sums)
            v = v + 0.5 * v + v;
          const Tensor reduced = on_device(Tensor::from_doubles({2 * channels + 1}, sums), stream);
          batchnorm_finalize_sums(reduced, t->running_mean, t->running_var, 0.1f, 1e-5f,
                                  t->batch_stats, stream);
        },
        [=, &stream] {
          return std::vector<Output>{{"sums", host_values(t->sums, stream)},
                                     {"batch_stats", host_values(t->batch_stats, stream)},
                                     {"running_mean", host_values(t->running_mean, stream)},
                                     {"running_var", host_values(t->running_var, stream)}};
        }};
  };
  cases.push_back(op);
}

}  // namespace engine::ops_harness
