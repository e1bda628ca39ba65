// BatchNorm's training forward (as the layer runs it: the statistics launches also writing the
// fp64 sums and finalizing, then normalize), its backward (reduce, then the element-wise pass;
// also with a fused ReLU, its mask read from y or recomputed from x, and the parameter
// gradients accumulated) on every activation, and SyncBN's fp64 phases separately.
#include <algorithm>
#include <cmath>

#include "bench/ops/case_kit.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

struct BnTensors {
  Tensor x, weight, bias, running_mean, running_var, stats, sums, batch_stats, workspace, y;
};

// The tensors of a training forward on `x` (already on the stream's device), allocated once
// as the layer does: a timed forward that allocated its output would time the fresh pages'
// faults on the CPU, which no training step after the first pays (resnet18's stem on a Zen 3
// part: 9.8-13.5 ms so, 3.2-4.3 ms without;
// bench/results/kernels-cpu-bn-forward-preallocated-amd-epyc-zen3-avx2-2026-12-07.txt).
BnTensors bn_tensors(const Tensor& x, const Tensor& weight, const Tensor& bias, Stream& stream) {
  const int64_t c = x.size(3);
  const Device device = stream.device();
  BnTensors t;
  t.x = x;
  t.weight = weight;
  t.bias = bias;
  t.running_mean = Tensor::empty({c}, DType::f32, device);
  t.running_var = Tensor::empty({c}, DType::f32, device);
  t.stats = Tensor::empty({batchnorm_stats_numel(c)}, DType::f32, device);
  t.sums = Tensor::empty({batchnorm_stats_numel(c)}, DType::f64, device);
  t.batch_stats = Tensor::empty({batchnorm_stats_numel(c)}, DType::f32, device);
  t.workspace = workspace(batchnorm_workspace_numel(x), stream);
  t.y = Tensor::empty(x.shape(), x.dtype(), device);
  return t;
}

// The training forward into `t` (running statistics from their initial 0 and 1 each time, so
// that every run checks the same values), with the epilogue a residual block's last BatchNorm
// fuses (residual add and ReLU) when `epilogue` has them.
void bn_forward(BnTensors& t, Stream& stream, const BatchNormEpilogue& epilogue = {}) {
  fill(t.running_mean, 0.f, stream);
  fill(t.running_var, 1.f, stream);
  batchnorm_stats({.x = t.x, .stats = t.stats, .workspace = t.workspace}, stream,
                  {.sums = t.sums,
                   .batch_stats = t.batch_stats,
                   .running_mean = t.running_mean,
                   .running_var = t.running_var,
                   .constants = {.momentum = 0.1f, .eps = 1e-5f}});
  batchnorm_normalize(
      {.x = t.x, .batch_stats = t.batch_stats, .weight = t.weight, .bias = t.bias, .y = t.y},
      stream, epilogue);
}

// Both: for the backward cases' setup and the finite differences.
BnTensors bn_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Stream& stream) {
  BnTensors t = bn_tensors(x, weight, bias, stream);
  bn_forward(t, stream);
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

// One BatchNorm case's inputs and how it is named and checked.
struct BnCase {
  const Activation* activation;
  DType dtype;
  double mean = 0.5;
  // Forward: with the residual add and ReLU, then the eval forward. Backward: after such a
  // forward, through its ReLU (folded into both passes), writing the ReLU's gradient for the
  // residual branch and accumulating the parameter gradients.
  bool fused = false;
  // Backward, fused: the ReLU's mask recomputed from x with a ConvInputAffine's scale and shift
  // (y never stored: the next convolution applied BatchNorm and ReLU as it loaded x).
  bool mask_from_x = false;
};

OpCase bn_case(const ModelShapes& model, const BnCase& spec, bool backward) {
  const Shape shape = spec.activation->nhwc;
  const DType dtype = spec.dtype;
  const int64_t channels = shape[3];
  const bool far = spec.mean > 10;
  const double std = far ? 1.0 : 2.0;
  const double mean_scale = std::abs(spec.mean) + std;
  const Operand x(shape, dtype, 21, spec.mean, std);
  const Operand dy(shape, dtype, 22);
  const Operand weight({channels}, DType::f32, 23, 1.0, 0.5);
  const Operand bias({channels}, DType::f32, 24);
  const double tolerance = dtype == DType::bf16 ? kBf16 : kReduceF32;
  OpCase c;
  c.op = backward ? OpId::bn_backward : OpId::bn_forward;
  c.name = model.prefix(*spec.activation) + (backward ? " bn_backward" : " bn_forward");
  if (far) c.name += " at mean " + std::to_string(static_cast<int>(spec.mean));
  if (spec.fused) {
    c.name += !backward          ? " (+ residual, ReLU; then eval)"
              : spec.mask_from_x ? " (ReLU mask from x, residual grad, accumulate)"
                                 : " (ReLU, residual grad, accumulate)";
  }
  c.dtype = dtype;
  c.tolerance = tolerance;
  c.why = dtype == DType::bf16 ? kBf16Why : kReduceF32Why;
  c.elements = shape_numel(shape);
  c.bench = !far && !spec.fused;
  c.dims = shape;
  // Forward: the statistics pass reads x, normalize reads x and writes y; backward: reduce
  // reads dy and x, the element-wise pass reads them again and writes dx.
  c.bytes = bytes_of(static_cast<double>((backward ? 5 : 3) * shape_numel(shape)), dtype);
  const double act = far ? std::max(tolerance, kFarMean) : -1;
  if (backward) {
    const bool fused = spec.fused;
    // The fused ReLU's output: an input of its own (about half of it <= 0), not the forward's
    // y, whose elements near 0 may round to either side of it on the two devices.
    const Operand relu_output(shape, dtype, 28);
    const Operand grad0({channels}, DType::f32, 29);
    // The recomputed mask's scale and shift: inputs too, for the same reason (the forward's
    // batch statistics, from which conv_input_from_batchnorm would derive them, may differ by
    // an ulp between the devices). Scales of both signs, shifts about x's spread.
    const bool mask_from_x = spec.mask_from_x;
    const Operand relu_scale({channels}, DType::f32, 30, 0.5, 1.0);
    const Operand relu_shift({channels}, DType::f32, 31, 0.0, 1.0);
    c.prepare = [=](Stream& stream, Inputs inputs) {
      auto t = std::make_shared<BnTensors>(bn_forward(
          x.on(stream, inputs), weight.on(stream, inputs), bias.on(stream, inputs), stream));
      const Held y = hold(relu_output.on(stream, inputs));
      const Held scale = hold(relu_scale.on(stream, inputs));
      const Held shift = hold(relu_shift.on(stream, inputs));
      const Held grad = hold(dy.on(stream, inputs));
      const Held grad_sums = hold(Tensor::empty({2 * channels}, DType::f32, stream.device()));
      const Held dx = hold(Tensor::empty(shape, dtype, stream.device()));
      const Held relu_grad = hold(Tensor::empty(shape, dtype, stream.device()));
      const Held bias_grad = hold(grad0.on(stream, inputs));
      const Held weight_grad = hold(grad0.on(stream, inputs));
      return Prepared{
          [=, &stream] {
            // Unfused: the default fusion (no ReLU, no parameter gradients).
            BatchNormBackwardFusion fusion;
            if (fused) {
              fusion = {.relu = mask_from_x ? BatchNormReluGate{.scale = *scale, .shift = *shift}
                                            : BatchNormReluGate{.output = *y},
                        .relu_grad = *relu_grad,
                        .bias_grad = *bias_grad,
                        .weight_grad = *weight_grad,
                        .write = GradWrite::accumulate};
            }
            batchnorm_backward_reduce({.dy = *grad,
                                       .x = t->x,
                                       .batch_stats = t->batch_stats,
                                       .grad_sums = *grad_sums,
                                       .workspace = t->workspace},
                                      stream, fusion);
            batchnorm_backward_elementwise({.dy = *grad,
                                            .x = t->x,
                                            .batch_stats = t->batch_stats,
                                            .weight = t->weight,
                                            .grad_sums = *grad_sums,
                                            .dx = *dx},
                                           stream, fusion.relu);
          },
          [=, &stream] {
            const double sums_tolerance = far ? kFarMean : kReduceF32;
            std::vector<Output> outputs{
                {"grad_sums", host_values(*grad_sums, stream), sums_tolerance},
                {"dx", host_values(*dx, stream), act}};
            if (fused) {
              outputs.push_back({"relu_grad", host_values(*relu_grad, stream)});
              outputs.push_back({"bias_grad", host_values(*bias_grad, stream), sums_tolerance});
              outputs.push_back({"weight_grad", host_values(*weight_grad, stream), sums_tolerance});
            }
            return outputs;
          }};
    };
    return c;
  }
  const bool fused = spec.fused;
  c.prepare = [=](Stream& stream, Inputs inputs) {
    auto t = std::make_shared<BnTensors>(bn_tensors(x.on(stream, inputs), weight.on(stream, inputs),
                                                    bias.on(stream, inputs), stream));
    const Held residual = hold(dy.on(stream, inputs));
    const Held y_eval = hold(Tensor::empty(shape, dtype, stream.device()));
    return Prepared{
        [=, &stream] {
          if (!fused) {
            bn_forward(*t, stream);
            return;
          }
          bn_forward(*t, stream, BatchNormEpilogue{*residual, true});
          batchnorm_eval_forward({.x = t->x,
                                  .running_mean = t->running_mean,
                                  .running_var = t->running_var,
                                  .weight = t->weight,
                                  .bias = t->bias,
                                  .y = *y_eval,
                                  .eps = 1e-5f},
                                 stream);
        },
        [=, &stream] {
          const std::vector<double> stats = host_values(t->batch_stats, stream);
          std::vector<Output> outputs{
              {fused ? "y (+ residual, ReLU)" : "y", host_values(t->y, stream), act}};
          if (fused) outputs.push_back({"y_eval", host_values(*y_eval, stream), act});
          outputs.push_back({"batch mean", head(stats, channels), 1e-6, mean_scale});
          outputs.push_back({"batch invstd and count", tail(stats, channels), kReduceF32});
          outputs.push_back(
              {"running_mean", host_values(t->running_mean, stream), 1e-6, mean_scale});
          outputs.push_back({"running_var", host_values(t->running_var, stream), kReduceF32});
          return outputs;
        }};
  };
  if (dtype == DType::f32 && !far && !fused) {
    c.differentiables = [=] {
      Stream host;
      const std::vector<float> probe = dy->to_floats(host);
      // Gradients of <y, probe> from the backward phases, on the stream's device.
      auto gradients = [=](Stream& stream) {
        Tensor in = on_device(*x, stream), w = on_device(*weight, stream);
        BnTensors t = bn_forward(in, w, on_device(*bias, stream), stream);
        Tensor grad = on_device(*dy, stream);
        Tensor grad_sums = Tensor::empty({2 * channels}, DType::f32, stream.device());
        batchnorm_backward_reduce({.dy = grad,
                                   .x = in,
                                   .batch_stats = t.batch_stats,
                                   .grad_sums = grad_sums,
                                   .workspace = t.workspace},
                                  stream);
        Tensor dx = Tensor::empty(shape, dtype, stream.device());
        batchnorm_backward_elementwise({.dy = grad,
                                        .x = in,
                                        .batch_stats = t.batch_stats,
                                        .weight = w,
                                        .grad_sums = grad_sums,
                                        .dx = dx},
                                       stream);
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
           [=](Stream& stream) { return gradients(stream)[0]; }},
          {"weight", weight->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return loss(stream, *x, Tensor::from_floats({channels}, point), *bias);
           },
           [=](Stream& stream) { return gradients(stream)[1]; }},
          {"bias", bias->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return loss(stream, *x, *weight, Tensor::from_floats({channels}, point));
           },
           [=](Stream& stream) { return gradients(stream)[2]; }}};
    };
  }
  return c;
}

// Every activation; the forward also with the fused epilogue; and the stem's also far from
// zero (its input's mean moves with the data).
std::vector<OpCase> bn_cases(const ModelShapes& model, DType dtype, bool backward) {
  if (dtype != DType::f32 && dtype != DType::bf16) return {};
  std::vector<OpCase> cases;
  for (const Activation& a : model.activations) {
    cases.push_back(bn_case(model, {&a, dtype}, backward));
    cases.push_back(bn_case(model, {&a, dtype, 0.5, true}, backward));
    if (backward) cases.push_back(bn_case(model, {&a, dtype, 0.5, true, true}, backward));
  }
  const Activation& stem = model.activations.front();
  cases.push_back(bn_case(model, {&stem, dtype, 1e3, true}, backward));
  return cases;
}

// SyncBN's fp64 phases: a layer's f32 statistics (mean, m2, count) -> f64 sums, and three
// ranks' summed sums -> the batch and running statistics. Their arithmetic is shared with the
// CPU twin (kernels/batchnorm_sums.h), so the device must give the same bits, at a mean far
// from zero too (where fp32 sums would lose the variance).
OpCase bn_sums_case(const std::string& prefix, int64_t channels, double mean) {
  std::vector<float> stats(static_cast<size_t>(2 * channels + 1));
  const std::vector<float> means = normal_values(channels, 25, DType::f32, mean, 1.0);
  const std::vector<float> m2 = normal_values(channels, 26, DType::f32, 300.0, 10.0);
  for (int64_t i = 0; i < channels; ++i) {
    stats[i] = means[i];
    stats[channels + i] = m2[i];
  }
  stats[2 * channels] = 299.f;
  const Operand host_stats(Tensor::from_floats({2 * channels + 1}, stats));
  const Operand running_mean(
      Tensor::from_floats({channels}, normal_values(channels, 27, DType::f32)));
  OpCase c;
  c.op = OpId::bn_sums;
  c.name = prefix + " C " + std::to_string(channels) + " at mean " +
           std::to_string(static_cast<int>(mean));
  c.dtype = DType::f32;
  c.tolerance = kExact;
  c.why = "the same fp64 expressions on both sides (kernels/batchnorm_sums.h): the same bits";
  c.elements = 2 * channels + 1;
  c.bench = false;
  c.dims = {channels};
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Device device = stream.device();
    auto t = std::make_shared<BnTensors>();
    t->stats = host_stats.on(stream, inputs);
    t->sums = Tensor::empty({2 * channels + 1}, DType::f64, device);
    t->batch_stats = Tensor::empty({2 * channels + 1}, DType::f32, device);
    t->running_mean = running_mean.on(stream, inputs);
    t->running_var = Tensor::zeros({channels}, DType::f32, device, stream);
    fill(t->running_var, 1.5f, stream);
    return Prepared{
        [=, &stream] {
          batchnorm_stats_to_sums(t->stats, t->sums, stream);
          // Three ranks' sums (this one's, half of it, and it again), as an all-reduce would
          // leave them: exact in f64.
          std::vector<double> sums = t->sums.to_doubles(stream);
          for (double& v : sums)
            v = v + 0.5 * v + v;
          const Tensor reduced = on_device(Tensor::from_doubles({2 * channels + 1}, sums), stream);
          batchnorm_finalize_sums({.sums = reduced,
                                   .running_mean = t->running_mean,
                                   .running_var = t->running_var,
                                   .batch_stats = t->batch_stats,
                                   .constants = {.momentum = 0.1f, .eps = 1e-5f}},
                                  stream);
        },
        [=, &stream] {
          return std::vector<Output>{{"sums", host_values(t->sums, stream)},
                                     {"batch_stats", host_values(t->batch_stats, stream)},
                                     {"running_mean", host_values(t->running_mean, stream)},
                                     {"running_var", host_values(t->running_var, stream)}};
        }};
  };
  return c;
}

// The PyTorch baselines' operands: dims are n h w c; PyTorch's layout is NCHW.
#define ENGINE_BN_OPERANDS                             \
  "    n, h, w, c = dims\n"                            \
  "    x = torch.randn(n, c, h, w)\n"                  \
  "    weight, bias = torch.ones(c), torch.zeros(c)\n" \
  "    running_mean, running_var = torch.zeros(c), torch.ones(c)"

}  // namespace

const OpDescription& describe_bn_forward() {
  static const OpDescription d{
      .id = OpId::bn_forward,
      .cases = [](const ModelShapes& model, DType dtype) { return bn_cases(model, dtype, false); },
      // Training mode: the batch statistics and the running statistics' update.
      .torch = "def make(dims):\n" ENGINE_BN_OPERANDS R"(
    return lambda: F.batch_norm(x, running_mean, running_var, weight, bias, training=True,
                                momentum=0.1, eps=1e-5)
)",
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

// aten's native_batch_norm_backward for the input, weight and bias gradients.
const OpDescription& describe_bn_backward() {
  static const OpDescription d{
      .id = OpId::bn_backward,
      .cases = [](const ModelShapes& model, DType dtype) { return bn_cases(model, dtype, true); },
      .torch = "def make(dims):\n" ENGINE_BN_OPERANDS R"(
    _, save_mean, save_invstd = torch.ops.aten.native_batch_norm(
        x, weight, bias, running_mean, running_var, True, 0.1, 1e-5)
    dy = torch.randn_like(x)
    return lambda: torch.ops.aten.native_batch_norm_backward(
        dy, x, weight, running_mean, running_var, save_mean, save_invstd, True, 1e-5,
        [True, True, True])
)",
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

const OpDescription& describe_bn_sums() {
  static const OpDescription d{
      .id = OpId::bn_sums, .cases = [](const ModelShapes& model, DType dtype) {
        std::vector<OpCase> cases;
        if (dtype != DType::f32) return cases;
        for (const Activation& a : model.activations) {
          for (double mean : {0.5, 1e3, 1e4})
            cases.push_back(bn_sums_case(model.prefix(a), a.nhwc[3], mean));
        }
        return cases;
      }};
  return d;
}

}  // namespace engine::op_registry
