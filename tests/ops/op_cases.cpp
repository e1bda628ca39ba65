#include "op_cases.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "bench/op_cases.h"
#include "bench/resnet_layers.h"
#include "close_values.h"
#include "conv_reference.h"
#include "kernels/ops.h"

namespace engine::ops_harness {
namespace {

using testing::normal_values;

// Tolerances, each with the reason a case states.
constexpr double kExact = 0;
constexpr char kExactWhy[] = "one rounding per element of the same fp32 expression on both sides";
constexpr double kBf16 = testing::kBf16Ulp;
constexpr char kBf16Why[] =
    "bf16 results: each side rounds its fp32 value once, and values a summation order apart "
    "may round to neighbouring bf16 numbers (one ulp, 2^-7 relative)";
constexpr double kGemmF32 = 3e-5;
constexpr char kGemmF32Why[] =
    "fp32 sums over K (up to 4608 terms) in another order: about sqrt(K) * 2^-24 of the RMS, "
    "with room for the worst element";
constexpr double kTf32 = 5e-5;
constexpr char kTf32Why[] =
    "operands rounded to tf32 on both sides (their products are exact in fp32); the tensor "
    "cores accumulate truncating where fp32 rounds: an H200 parted by 1.27e-5 at K = 4608 "
    "(bench/results/gpu-check-h200-2026-12-04)";
constexpr double kReduceF32 = 1e-5;
constexpr char kReduceF32Why[] =
    "per-channel or per-row fp32 reductions in another order (partials merged in a fixed order "
    "on the device, fp64 chunks on the CPU)";

// A host tensor of normal values from a seed, exactly representable in dtype.
Tensor host_normal(const Shape& shape, DType dtype, uint32_t seed, double mean = 0,
                   double std = 1) {
  return Tensor::from_floats(shape, normal_values(shape_numel(shape), seed, dtype, mean, std),
                             dtype);
}

// A host tensor made on first use: the case table is built whenever the test binary starts
// (even to list its tests), and most runs need a few of its cases (SGD's alone holds 11.7M
// values). *t and t-> give the tensor, as a shared_ptr would.
class HostTensor {
 public:
  HostTensor(Shape shape, DType dtype, uint32_t seed, double mean = 0, double std = 1)
      : state_(std::make_shared<State>(State{std::move(shape), dtype, seed, mean, std, {}})) {}
  const Tensor& operator*() const {
    State& s = *state_;
    if (!s.tensor.defined()) s.tensor = host_normal(s.shape, s.dtype, s.seed, s.mean, s.std);
    return s.tensor;
  }
  const Tensor* operator->() const { return &**this; }

 private:
  struct State {
    Shape shape;
    DType dtype;
    uint32_t seed;
    double mean, std;
    Tensor tensor;
  };
  std::shared_ptr<State> state_;
};

Tensor on_device(const Tensor& host, Stream& stream) {
  return host.to(stream.device(), stream);
}

// A CUDA workspace of `numel` f32 on the stream's device, or undefined when none is needed.
Tensor workspace(int64_t numel, Stream& stream) {
  return numel > 0 ? Tensor::empty({numel}, DType::f32, stream.device()) : Tensor();
}

// A tensor's values on the host: f64 exactly, the rest widened from float.
std::vector<double> host_values(const Tensor& t, Stream& stream) {
  if (t.dtype() == DType::f64) return t.to_doubles(stream);
  const std::vector<float> values = t.to_floats(stream);
  return {values.begin(), values.end()};
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

// <values of `out` after run(), probe>: the scalar a finite-difference check differentiates.
double probed(const Tensor& out, const std::vector<float>& probe, Stream& stream) {
  return dot(out.to_floats(stream), probe);
}

std::string dtype_suffix(DType dtype) {
  return std::string(dtype_name(dtype));
}

// ---------------------------------------------------------------------------------------
// Convolutions: every distinct layer of the network, three passes each.

// A case's operand on the stream's device: for the CPU reference of a tf32 case, rounded to
// tf32 as the tensor cores round it.
Tensor operand(const Tensor& host, Stream& stream, Fp32Math math) {
  if (math != Fp32Math::tf32 || !stream.device().is_cpu()) return on_device(host, stream);
  std::vector<float> values = host.to_floats(stream);
  for (float& v : values)
    v = testing::round_to_tf32(v);
  return Tensor::from_floats(host.shape(), values);
}

void add_conv_cases(std::vector<OpCase>& cases, const bench::ConvLayer& layer, DType dtype,
                    Fp32Math math = Fp32Math::exact) {
  const Conv2dShape shape = layer.shape;
  const bool tf32 = math == Fp32Math::tf32;
  const double weight_std = 1.0 / std::sqrt(static_cast<double>(shape.gemm_k()));
  // Shared host operands: x, w (scaled so outputs are O(1)) and a gradient at the output.
  const auto x = HostTensor(shape.input_shape(), dtype, 11);
  const auto w = HostTensor(shape.filter_shape(), dtype, 12, 0, weight_std);
  const auto dy = HostTensor(shape.output_shape(), dtype, 13);
  const std::string name = layer.name + " " + shape_str(shape.input_shape());
  const double tolerance = dtype == DType::bf16 ? kBf16 : tf32 ? kTf32 : kGemmF32;
  const std::string why = dtype == DType::bf16 ? kBf16Why : tf32 ? kTf32Why : kGemmF32Why;
  const int64_t elements =
      std::max(shape_numel(shape.input_shape()), shape_numel(shape.output_shape()));

  // The forward, without a bias (torchvision's convolutions have none) or with one (nn::Conv2d
  // takes one): a forward with a bias never splits K, so that is the unsplit path's epilogue on
  // the layers whose plain forward splits. The workspace is the layers' (undefined where no
  // split pays, which the op takes as none).
  const auto bias = HostTensor({shape.out_channels}, DType::f32, 14);
  auto forward_case = [&](bool with_bias) {
    OpCase op{"conv2d_forward",
              with_bias ? name + " + bias" : name,
              dtype,
              tolerance,
              why,
              elements,
              nullptr,
              nullptr,
              math};
    op.prepare = [=](Stream& stream) {
      auto dx = std::make_shared<Tensor>(operand(*x, stream, math));
      auto dw = std::make_shared<Tensor>(operand(*w, stream, math));
      auto b = std::make_shared<Tensor>(with_bias ? on_device(*bias, stream) : Tensor());
      auto y =
          std::make_shared<Tensor>(Tensor::empty(shape.output_shape(), dtype, stream.device()));
      auto scratch = std::make_shared<Tensor>(
          workspace(conv2d_forward_workspace_numel(shape, stream.device()), stream));
      return Prepared{[=, &stream] { conv2d_forward(shape, *dx, *dw, *b, *y, *scratch, stream); },
                      [=, &stream] {
                        return std::vector<Output>{{"y", host_values(*y, stream)}};
                      }};
    };
    return op;
  };
  OpCase forward = forward_case(false);
  cases.push_back(forward_case(true));
  if (dtype == DType::f32 && !tf32) {
    forward.differentiables = [=] {
      Stream host;
      const std::vector<float> probe = dy->to_floats(host);
      auto forward_loss = [=](Stream& stream, const Tensor& input, const Tensor& filters) {
        Tensor y = Tensor::empty(shape.output_shape(), dtype, stream.device());
        conv2d_forward(shape, on_device(input, stream), on_device(filters, stream), Tensor(), y,
                       stream);
        return probed(y, probe, stream);
      };
      return std::vector<Differentiable>{
          {"x", x->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return forward_loss(stream, Tensor::from_floats(shape.input_shape(), point), *w);
           },
           [=](Stream& stream) {
             Tensor dx = Tensor::empty(shape.input_shape(), dtype, stream.device());
             conv2d_backward_data(shape, on_device(*dy, stream), on_device(*w, stream), dx, stream);
             return dx.to_floats(stream);
           }},
          {"w", w->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return forward_loss(stream, *x, Tensor::from_floats(shape.filter_shape(), point));
           },
           [=](Stream& stream) {
             Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32, stream.device());
             Tensor none;
             Tensor scratch =
                 workspace(conv2d_backward_filter_workspace_numel(shape, stream.device()), stream);
             conv2d_backward_filter(shape, on_device(*x, stream), on_device(*dy, stream), dw, none,
                                    false, scratch, stream);
             return dw.to_floats(stream);
           }}};
    };
  }
  cases.push_back(forward);

  OpCase data{"conv2d_backward_data", name, dtype, tolerance, why, elements, nullptr, nullptr};
  data.prepare = [=](Stream& stream) {
    auto grad = std::make_shared<Tensor>(operand(*dy, stream, math));
    auto dw = std::make_shared<Tensor>(operand(*w, stream, math));
    auto dx = std::make_shared<Tensor>(Tensor::empty(shape.input_shape(), dtype, stream.device()));
    auto scratch = std::make_shared<Tensor>(
        workspace(conv2d_backward_data_workspace_numel(shape, stream.device()), stream));
    return Prepared{
        [=, &stream] { conv2d_backward_data(shape, *grad, *dw, *dx, *scratch, stream); },
        [=, &stream] {
          return std::vector<Output>{{"dx", host_values(*dx, stream)}};
        }};
  };
  data.fp32_math = math;
  cases.push_back(data);

  // The filter gradient is fp32 (the master weights' gradient) for both dtypes: its
  // tolerance is the fp32 one, over sums of M = batch * out_h * out_w products.
  OpCase filter{"conv2d_backward_filter",
                name,
                dtype,
                tf32 ? kTf32 : kGemmF32,
                tf32 ? kTf32Why : kGemmF32Why,
                elements,
                nullptr,
                nullptr,
                math};
  filter.prepare = [=](Stream& stream) {
    auto input = std::make_shared<Tensor>(operand(*x, stream, math));
    auto grad = std::make_shared<Tensor>(operand(*dy, stream, math));
    auto dw =
        std::make_shared<Tensor>(Tensor::empty(shape.filter_shape(), DType::f32, stream.device()));
    auto scratch = std::make_shared<Tensor>(
        workspace(conv2d_backward_filter_workspace_numel(shape, stream.device()), stream));
    return Prepared{[=, &stream] {
                      Tensor none;
                      conv2d_backward_filter(shape, *input, *grad, *dw, none, false, *scratch,
                                             stream);
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"dw", host_values(*dw, stream)}};
                    }};
  };
  cases.push_back(filter);
}

// The bf16 step's casts of a layer's filters: f32 master -> bf16 compute weights (dtype
// bf16), and back (dtype f32).
void add_cast_case(std::vector<OpCase>& cases, const bench::ConvLayer& layer, DType dtype) {
  const Shape shape = layer.shape.filter_shape();
  const DType from = dtype == DType::bf16 ? DType::f32 : DType::bf16;
  const auto src = HostTensor(shape, from, 91);
  OpCase op{"cast",
            layer.name + " filters " + shape_str(shape) + " from " + dtype_suffix(from),
            dtype,
            kExact,
            "one conversion per element, rounding to nearest even on both sides",
            shape_numel(shape),
            nullptr,
            nullptr};
  op.prepare = [=](Stream& stream) {
    auto in = std::make_shared<Tensor>(on_device(*src, stream));
    auto out = std::make_shared<Tensor>(Tensor::empty(shape, dtype, stream.device()));
    return Prepared{[=, &stream] { cast(*in, *out, stream); },
                    [=, &stream] {
                      return std::vector<Output>{{"out", host_values(*out, stream)}};
                    }};
  };
  cases.push_back(op);
}

// ---------------------------------------------------------------------------------------
// BatchNorm: the training forward's phases, and the backward's.

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

void add_batchnorm_cases(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype,
                         double mean = 0.5) {
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

// ---------------------------------------------------------------------------------------
// Element-wise ops and pooling.

// offset > 0: every tensor is a view that many elements into a buffer, as the flat parameter
// and gradient buffers hand out views: no 16-byte alignment, so the kernels' scalar paths.
void add_activation_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype,
                         int64_t offset = 0) {
  const Shape shape = c.dims;
  const auto a = HostTensor(shape, dtype, 31);
  const auto b = HostTensor(shape, dtype, 32);
  // relu_backward reads the forward's output: a ReLU's, with its exact zeros (where the
  // gradient must stop), rather than normal values that are never zero.
  const std::string which = c.op;
  auto placed = [=](Stream& stream) {
    if (offset == 0) return Tensor::empty(shape, dtype, stream.device());
    return Tensor::empty({shape_numel(shape) + offset}, dtype, stream.device()).view(offset, shape);
  };
  auto placed_copy = [=](const Tensor& host, Stream& stream) {
    Tensor t = placed(stream);
    copy(on_device(host, stream), t, stream);
    return t;
  };
  auto first_input = [=](Stream& stream) {
    Tensor in = placed_copy(*a, stream);
    if (which == "relu_backward") relu_forward(in, in, stream);
    return in;
  };
  const std::string name =
      offset == 0 ? c.name : c.name + " (views " + std::to_string(offset) + " element in)";
  OpCase op{c.op, name, dtype, kExact, kExactWhy, shape_numel(shape) + offset, nullptr, nullptr};
  op.prepare = [=](Stream& stream) {
    auto in = std::make_shared<Tensor>(first_input(stream));
    auto other = std::make_shared<Tensor>(placed_copy(*b, stream));
    auto out = std::make_shared<Tensor>(placed(stream));
    return Prepared{[=, &stream] {
                      if (which == "relu") {
                        relu_forward(*in, *out, stream);
                      } else if (which == "relu_backward") {
                        relu_backward(*in, *other, *out, stream);  // in plays y, other dy
                      } else if (which == "add") {
                        add(*in, *other, *out, stream);
                      } else if (which == "fill") {
                        fill(*out, 1.00390625f, stream);  // not a bf16 value: rounded once
                      } else {
                        add_relu_forward(*in, *other, *out, stream);
                      }
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"out", host_values(*out, stream)}};
                    }};
  };
  cases.push_back(op);
}

void add_maxpool_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype) {
  const Shape shape = c.dims;
  const MaxPool2dParams pool;
  const Shape pooled = {shape[0], pool.output_size(shape[1]), pool.output_size(shape[2]), shape[3]};
  const auto x = HostTensor(shape, dtype, 41);
  const auto dy = HostTensor(pooled, dtype, 42);
  const bool backward = c.op == "maxpool_backward";
  OpCase op{c.op,
            c.name,
            dtype,
            kExact,
            "a maximum is exact, and the backward sums each input's gradients in the same "
            "row-major order on both sides",
            shape_numel(shape),
            nullptr,
            nullptr};
  op.prepare = [=](Stream& stream) {
    const Device device = stream.device();
    auto in = std::make_shared<Tensor>(on_device(*x, stream));
    auto y = std::make_shared<Tensor>(Tensor::empty(pooled, dtype, device));
    auto argmax = std::make_shared<Tensor>(Tensor::empty(pooled, DType::i32, device));
    auto grad = std::make_shared<Tensor>(on_device(*dy, stream));
    auto dx = std::make_shared<Tensor>(Tensor::empty(shape, dtype, device));
    if (backward) maxpool2d_forward(pool, *in, *y, *argmax, stream);
    return Prepared{[=, &stream] {
                      if (backward) {
                        maxpool2d_backward(pool, *grad, *argmax, *dx, stream);
                      } else {
                        maxpool2d_forward(pool, *in, *y, *argmax, stream);
                      }
                    },
                    [=, &stream] {
                      if (backward) return std::vector<Output>{{"dx", host_values(*dx, stream)}};
                      return std::vector<Output>{{"y", host_values(*y, stream)},
                                                 {"argmax", host_values(*argmax, stream)}};
                    }};
  };
  cases.push_back(op);
}

void add_avgpool_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype) {
  const Shape shape = c.dims;
  const Shape pooled = {shape[0], shape[3]};
  const auto x = HostTensor(shape, dtype, 51);
  const auto dy = HostTensor(pooled, dtype, 52);
  const bool backward = c.op == "avgpool_backward";
  OpCase op{c.op,
            c.name,
            dtype,
            dtype == DType::bf16 ? kBf16 : 1e-6,
            dtype == DType::bf16
                ? kBf16Why
                : "an fp32 mean over H * W (at most 49 values here) in another order",
            shape_numel(shape),
            nullptr,
            nullptr};
  op.prepare = [=](Stream& stream) {
    auto in = std::make_shared<Tensor>(on_device(backward ? *dy : *x, stream));
    auto out =
        std::make_shared<Tensor>(Tensor::empty(backward ? shape : pooled, dtype, stream.device()));
    return Prepared{[=, &stream] {
                      if (backward) {
                        global_avgpool_backward(*in, *out, stream);
                      } else {
                        global_avgpool_forward(*in, *out, stream);
                      }
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"out", host_values(*out, stream)}};
                    }};
  };
  if (dtype == DType::f32 && !backward) {
    op.differentiables = [=] {
      Stream host;
      const std::vector<float> probe = dy->to_floats(host);
      return std::vector<Differentiable>{
          {"x", x->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             Tensor y = Tensor::empty(pooled, dtype, stream.device());
             global_avgpool_forward(on_device(Tensor::from_floats(shape, point), stream), y,
                                    stream);
             return probed(y, probe, stream);
           },
           [=](Stream& stream) {
             Tensor dx = Tensor::empty(shape, dtype, stream.device());
             global_avgpool_backward(on_device(*dy, stream), dx, stream);
             return dx.to_floats(stream);
           }}};
    };
  }
  cases.push_back(op);
}

// ---------------------------------------------------------------------------------------
// The fc layer, the loss and the optimizer.

void add_linear_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype) {
  const int64_t rows = c.dims[0], in = c.dims[1], out = c.dims[2];
  const auto x = HostTensor({rows, in}, dtype, 61);
  const auto w = HostTensor({out, in}, dtype, 62, 0, 1.0 / std::sqrt(static_cast<double>(in)));
  const auto bias = HostTensor({out}, DType::f32, 63);
  const auto dy = HostTensor({rows, out}, dtype, 64);
  const std::string which = c.op;
  const bool weight_pass = which == "linear_bwd_weight";
  const bool bf16_out = dtype == DType::bf16 && !weight_pass;
  OpCase op{
      c.op,       c.name,  dtype,  bf16_out ? kBf16 : kGemmF32, bf16_out ? kBf16Why : kGemmF32Why,
      rows * out, nullptr, nullptr};
  op.prepare = [=](Stream& stream) {
    const Device device = stream.device();
    auto tx = std::make_shared<Tensor>(on_device(*x, stream));
    auto tw = std::make_shared<Tensor>(on_device(*w, stream));
    auto tb = std::make_shared<Tensor>(on_device(*bias, stream));
    auto tdy = std::make_shared<Tensor>(on_device(*dy, stream));
    auto result = std::make_shared<std::vector<Tensor>>();
    if (which == "linear_fwd") {
      result->push_back(Tensor::empty({rows, out}, dtype, device));
    } else if (which == "linear_bwd_data") {
      result->push_back(Tensor::empty({rows, in}, dtype, device));
    } else {
      result->push_back(Tensor::empty({out, in}, DType::f32, device));
      result->push_back(Tensor::empty({out}, DType::f32, device));
      result->push_back(
          workspace(linear_backward_weight_workspace_numel(rows, in, out, device), stream));
    }
    return Prepared{[=, &stream] {
                      std::vector<Tensor>& r = *result;
                      if (which == "linear_fwd") {
                        linear_forward(*tx, *tw, *tb, r[0], stream);
                      } else if (which == "linear_bwd_data") {
                        linear_backward_data(*tdy, *tw, r[0], stream);
                      } else {
                        linear_backward_weight(*tx, *tdy, r[0], r[1], false, r[2], stream);
                      }
                    },
                    [=, &stream] {
                      std::vector<Output> outputs{{"out", host_values((*result)[0], stream)}};
                      if (result->size() > 1) {
                        outputs.push_back({"dbias", host_values((*result)[1], stream)});
                      }
                      return outputs;
                    }};
  };
  if (dtype == DType::f32 && which == "linear_fwd") {
    op.differentiables = [=] {
      Stream host;
      const std::vector<float> probe = dy->to_floats(host);
      auto loss = [=](Stream& stream, const Tensor& tx, const Tensor& tw, const Tensor& tb) {
        Tensor y = Tensor::empty({rows, out}, dtype, stream.device());
        linear_forward(on_device(tx, stream), on_device(tw, stream), on_device(tb, stream), y,
                       stream);
        return probed(y, probe, stream);
      };
      auto weight_grads = [=](Stream& stream) {
        const Device device = stream.device();
        Tensor dw = Tensor::empty({out, in}, DType::f32, device);
        Tensor db = Tensor::empty({out}, DType::f32, device);
        Tensor scratch =
            workspace(linear_backward_weight_workspace_numel(rows, in, out, device), stream);
        linear_backward_weight(on_device(*x, stream), on_device(*dy, stream), dw, db, false,
                               scratch, stream);
        return std::vector<std::vector<float>>{dw.to_floats(stream), db.to_floats(stream)};
      };
      return std::vector<Differentiable>{
          {"x", x->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return loss(stream, Tensor::from_floats({rows, in}, point), *w, *bias);
           },
           [=](Stream& stream) {
             Tensor dx = Tensor::empty({rows, in}, dtype, stream.device());
             linear_backward_data(on_device(*dy, stream), on_device(*w, stream), dx, stream);
             return dx.to_floats(stream);
           }},
          {"w", w->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return loss(stream, *x, Tensor::from_floats({out, in}, point), *bias);
           },
           [=](Stream& stream) { return weight_grads(stream)[0]; }},
          {"bias", bias->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return loss(stream, *x, *w, Tensor::from_floats({out}, point));
           },
           [=](Stream& stream) { return weight_grads(stream)[1]; }}};
    };
  }
  cases.push_back(op);
}

// Logits whose label of row i has about kRanks[i % 4] classes ahead of it: both sides of the
// top-1 and top-5 edges, which random logits over 1000 classes would almost never touch. The
// label takes the value of that rank's class and that class the label's (values tied with it
// may move the rank by one; both devices break ties alike).
Tensor ranked_logits(int64_t n, int64_t classes, DType dtype, const std::vector<int32_t>& labels) {
  static constexpr int64_t kRanks[] = {4, 5, 0, 1};
  std::vector<float> values = normal_values(n * classes, 72, dtype, 0, 3);
  for (int64_t i = 0; i < n; ++i) {
    float* row = values.data() + i * classes;
    const int64_t label = labels[static_cast<size_t>(i)];
    std::vector<int64_t> order(static_cast<size_t>(classes));
    for (int64_t j = 0; j < classes; ++j)
      order[static_cast<size_t>(j)] = j;
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    order.erase(std::find(order.begin(), order.end(), label));
    std::swap(row[label], row[order[static_cast<size_t>(kRanks[i % 4])]]);
  }
  return Tensor::from_floats({n, classes}, values, dtype);
}

void add_loss_case(std::vector<OpCase>& cases, const bench::OpCase& c, DType dtype) {
  const bool topk = c.op == "topk";
  // top-k: four rows at least, so that a label sits on each side of both edges.
  const int64_t n = topk ? std::max<int64_t>(c.dims[0], 4) : c.dims[0], classes = c.dims[1];
  std::vector<int32_t> label_values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    label_values[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37 + 5) % classes);
  const auto logits = topk
                          ? std::make_shared<Tensor>(ranked_logits(n, classes, dtype, label_values))
                          : std::make_shared<Tensor>(*HostTensor({n, classes}, dtype, 71, 0, 3));
  const auto labels = std::make_shared<Tensor>(Tensor::from_ints({n}, label_values));
  constexpr float kSmoothing = 0.1f;
  OpCase op{
      c.op,
      topk ? c.name + " (" + std::to_string(n) + " rows: labels at ranks 4, 5, 0, 1)" : c.name,
      dtype,
      topk                   ? kExact
      : dtype == DType::bf16 ? kBf16
                             : kReduceF32,
      topk                   ? "counts of ranks: exact"
      : dtype == DType::bf16 ? kBf16Why
                             : "an fp32 log-sum-exp over the classes in another order",
      n * classes,
      nullptr,
      nullptr};
  op.prepare = [=](Stream& stream) {
    const Device device = stream.device();
    auto z = std::make_shared<Tensor>(on_device(*logits, stream));
    auto y = std::make_shared<Tensor>(on_device(*labels, stream));
    auto sample = std::make_shared<Tensor>(Tensor::empty({n}, DType::f32, device));
    auto loss = std::make_shared<Tensor>(Tensor::empty({1}, DType::f32, device));
    auto dz = std::make_shared<Tensor>(Tensor::empty({n, classes}, dtype, device));
    auto correct = std::make_shared<Tensor>(Tensor::empty({2}, DType::f32, device));
    return Prepared{[=, &stream] {
                      if (topk) {
                        topk_correct(*z, *y, *correct, stream);
                        return;
                      }
                      cross_entropy_forward(*z, *y, kSmoothing, *sample, *loss, stream);
                      cross_entropy_backward(*z, *y, kSmoothing, 1.f, *dz, stream);
                    },
                    [=, &stream] {
                      if (topk)
                        return std::vector<Output>{{"correct", host_values(*correct, stream)}};
                      return std::vector<Output>{{"sample_loss", host_values(*sample, stream)},
                                                 {"loss", host_values(*loss, stream)},
                                                 {"dlogits", host_values(*dz, stream)}};
                    }};
  };
  if (dtype == DType::f32 && !topk) {
    op.differentiables = [=] {
      Stream host;
      return std::vector<Differentiable>{
          {"logits", logits->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             const Device device = stream.device();
             Tensor sample = Tensor::empty({n}, DType::f32, device);
             Tensor loss = Tensor::empty({1}, DType::f32, device);
             cross_entropy_forward(on_device(Tensor::from_floats({n, classes}, point), stream),
                                   on_device(*labels, stream), kSmoothing, sample, loss, stream);
             return static_cast<double>(loss.to_floats(stream)[0]);
           },
           [=](Stream& stream) {
             Tensor dz = Tensor::empty({n, classes}, dtype, stream.device());
             cross_entropy_backward(on_device(*logits, stream), on_device(*labels, stream),
                                    kSmoothing, 1.f, dz, stream);
             return dz.to_floats(stream);
           }}};
    };
  }
  cases.push_back(op);
}

// resnet_train's SGD (momentum 0.9, weight decay 1e-4; --nesterov optional) over `shape`.
void add_sgd_case(std::vector<OpCase>& cases, const bench::OpCase& c, bool nesterov) {
  const Shape shape = c.dims;
  const auto params = HostTensor(shape, DType::f32, 81);
  const auto grads = HostTensor(shape, DType::f32, 82, 0, 1e-2);
  const SgdOptions options{
      .lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = nesterov};
  OpCase op{c.op,
            c.name,
            DType::f32,
            1e-6,
            "fp32 multiply-adds that nvcc may fuse (one rounding fewer) where the CPU does not",
            shape_numel(shape),
            nullptr,
            nullptr};
  op.prepare = [=](Stream& stream) {
    auto p = std::make_shared<Tensor>(on_device(*params, stream));
    auto g = std::make_shared<Tensor>(on_device(*grads, stream));
    auto buffer =
        std::make_shared<Tensor>(Tensor::zeros(shape, DType::f32, stream.device(), stream));
    // The first step fills the momentum buffer (PyTorch's "buf is None"); the call is a
    // steady step after it, which reads the buffer too.
    sgd_step(options, *p, *g, *buffer, true, stream);
    return Prepared{[=, &stream] { sgd_step(options, *p, *g, *buffer, false, stream); },
                    [=, &stream] {
                      return std::vector<Output>{{"params", host_values(*p, stream)},
                                                 {"momentum_buffer", host_values(*buffer, stream)}};
                    }};
  };
  cases.push_back(op);
}

}  // namespace

std::string OpCase::id() const {
  return op + "/" + (fp32_math == Fp32Math::tf32 ? "tf32" : dtype_suffix(dtype)) + "/" + name;
}

CaseConfig case_config_from_env() {
  CaseConfig config;
  if (const char* arch = std::getenv("ENGINE_OPS_ARCH")) config.arch = arch;
  if (const char* size = std::getenv("ENGINE_OPS_IMAGE_SIZE")) config.image_size = std::atoll(size);
  if (const char* batch = std::getenv("ENGINE_OPS_BATCH")) config.batch = std::atoll(batch);
  return config;
}

std::vector<OpCase> all_op_cases(const CaseConfig& config) {
  std::vector<OpCase> cases;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const bench::ConvLayer& layer :
         bench::resnet_conv_layers(config.arch, config.batch, config.image_size)) {
      add_conv_cases(cases, layer, dtype);
      if (dtype == DType::f32) add_conv_cases(cases, layer, dtype, Fp32Math::tf32);
      add_cast_case(cases, layer, dtype);
    }
    for (const bench::OpCase& c :
         bench::resnet_op_cases(config.arch, config.batch, config.image_size)) {
      if (c.op == "bn_forward" || c.op == "bn_backward") {
        add_batchnorm_cases(cases, c, dtype);
        // The stem's BatchNorm also far from zero (its input's mean moves with the data).
        if (c.name.find(" stem out ") != std::string::npos)
          add_batchnorm_cases(cases, c, dtype, 1e3);
        if (c.op == "bn_forward" && dtype == DType::f32) {
          for (double mean : {0.5, 1e3, 1e4})
            add_bn_sums_case(cases, c.name.substr(0, c.name.rfind(' ')), c.dims[3], mean);
        }
      } else if (c.op == "relu" || c.op == "relu_backward" || c.op == "add_relu") {
        add_activation_case(cases, c, dtype);
        if (c.op == "add_relu") {
          // The residual block's gradient join (a plain add), and the fill that zeroes or
          // initializes buffers, on the same activation.
          for (const char* other : {"add", "fill"}) {
            bench::OpCase sibling = c;
            sibling.op = other;
            sibling.name = c.name.substr(0, c.name.rfind(' ') + 1) + other;
            add_activation_case(cases, sibling, dtype);
          }
        }
        if (c.op != "relu_backward") add_activation_case(cases, c, dtype, 1);
      } else if (c.op == "maxpool" || c.op == "maxpool_backward") {
        add_maxpool_case(cases, c, dtype);
      } else if (c.op == "avgpool" || c.op == "avgpool_backward") {
        add_avgpool_case(cases, c, dtype);
      } else if (c.op.starts_with("linear_")) {
        add_linear_case(cases, c, dtype);
      } else if (c.op == "cross_entropy" || c.op == "topk") {
        add_loss_case(cases, c, dtype);
      } else if (c.op == "sgd" && dtype == DType::f32) {
        // Master weights: f32 only. The whole flat buffer (too large for the sim device), and
        // the stem's filters, as the view of it that each layer reads, with and without
        // Nesterov momentum.
        add_sgd_case(cases, c, false);
        const Conv2dShape stem =
            bench::resnet_conv_layers(config.arch, config.batch, config.image_size)[0].shape;
        for (bool nesterov : {false, true}) {
          const Shape filters = stem.filter_shape();
          const bench::OpCase slice{config.arch + " sgd step over conv1.weight " +
                                        shape_str(filters) + (nesterov ? " (nesterov)" : ""),
                                    "sgd", filters, 0, 0};
          add_sgd_case(cases, slice, nesterov);
        }
      }
    }
  }
  return cases;
}

}  // namespace engine::ops_harness
