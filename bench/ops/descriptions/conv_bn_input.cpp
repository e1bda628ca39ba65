// BatchNorm-apply and ReLU fused into the next convolution's operand loads (ConvInputAffine,
// kernels/ops/conv.h): conv_input_from_batchnorm, then the forward (plain, or also giving the
// next BatchNorm's statistics of y: conv2 and conv3 of a bottleneck) or the filter gradient
// reading the raw x through it, on the layers that read a BatchNorm + ReLU output in ResNet
// (3x3 stride 1 and pointwise 1x1). The harness checks the device against the CPU twin, which
// transforms x into scratch and runs the plain convolution. f32 exact and bf16 only: against
// tf32 the device rounds the transformed operand, which the CPU cannot be handed rounded
// (the SIMT test, tests/kernels/test_conv_transform_simt.cpp, covers tf32).
#include <algorithm>
#include <cmath>
#include <vector>

#include "bench/ops/case_kit.h"
#include "bench/ops/descriptions/stats_outputs.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

enum class Pass { forward, forward_stats, backward_filter };
// Where the coefficients come from: the batch's statistics (training) or the running ones
// (evaluation: conv_input_from_running_stats).
enum class Statistics { batch, running };

// batch_stats (mean ~ N(0, 1), invstd in [0.5, 1.5], a count) and the affine parameters,
// with biases above the means' spread so that a padding read as act(shift) would show.
struct BnInput {
  explicit BnInput(int64_t channels)
      : stats(stats_tensor(channels)),
        weight({channels}, DType::f32, 22, 1.0, 0.5),
        bias({channels}, DType::f32, 23, 0.5, 0.5) {}
  static Operand stats_tensor(int64_t channels) {
    Stream host;
    std::vector<float> values = host_normal({channels}, DType::f32, 21).to_floats(host);
    for (int64_t c = 0; c < channels; ++c)
      values.push_back(0.5f + static_cast<float>(c % 11) / 10.f);
    values.push_back(128.f);
    return Operand(Tensor::from_floats({2 * channels + 1}, values));
  }
  Operand stats, weight, bias;
};

constexpr float kEvalEps = 1e-5f;

bool reads_batchnorm_relu(const Conv2dShape& s) {
  const bool pointwise = s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.pad_h == 0;
  const bool three_by_three = s.kernel_h == 3 && s.kernel_w == 3 && s.stride_h == 1;
  return s.in_channels > 3 && (pointwise || three_by_three);
}

void add_case(std::vector<OpCase>& cases, const bench::ConvLayer& layer, DType dtype, Pass pass,
              Statistics statistics = Statistics::batch) {
  const Conv2dShape shape = layer.shape;
  const int64_t channels = shape.in_channels;
  const Operand x(shape.input_shape(), dtype, 31);
  const Operand w(shape.filter_shape(), dtype, 32, 0,
                  1.0 / std::sqrt(static_cast<double>(shape.gemm_k())));
  const Operand dy(shape.output_shape(), dtype, 33);
  const BnInput bn(channels);
  OpCase c;
  c.name = layer.name + " " + shape_str(shape.input_shape()) +
           (statistics == Statistics::running ? " running statistics" : "");
  // Running means and variances (in [0.5, 1.5]) for evaluation's coefficients.
  const Operand running_mean({channels}, DType::f32, 24);
  const Operand running_var({channels}, DType::f32, 25, 1.0, 0.25);
  c.dtype = dtype;
  c.elements = std::max(shape_numel(shape.input_shape()), shape_numel(shape.output_shape()));
  c.bench = false;
  c.flops = 2.0 * static_cast<double>(shape.gemm_m()) * shape.out_channels * shape.gemm_k();
  // Both sides read the same transformed operand (one fused multiply-add, rounded once to the
  // dtype): the convolution's tolerance. The filter gradient is fp32 for both dtypes.
  // With statistics, they follow y's tolerance (conv_stats.cpp).
  const bool forward = pass != Pass::backward_filter;
  const bool bf16_output = dtype == DType::bf16 && forward;
  c.tolerance = bf16_output ? kBf16 : kGemmF32;
  c.why = bf16_output ? kBf16Why : kGemmF32Why;
  c.op = pass == Pass::forward         ? OpId::conv2d_forward_bn_input
         : pass == Pass::forward_stats ? OpId::conv2d_forward_stats_bn_input
                                       : OpId::conv2d_backward_filter_bn_input;
  const ConvAlgo unsplit{.split_k = 1};  // with statistics: from the epilogue on the device
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Device device = stream.device();
    const Held in = hold(x.on(stream, inputs));
    const Held filters = hold(w.on(stream, inputs));
    const Held grad = hold(dy.on(stream, inputs));
    const Held stats = hold(bn.stats.on(stream, Inputs::seeded));
    const Held weight = hold(bn.weight.on(stream, inputs));
    const Held bias = hold(bn.bias.on(stream, inputs));
    const Held mean_in = hold(running_mean.on(stream, inputs));
    const Held var_in = hold(running_var.on(stream, inputs));
    const Held scale = hold(Tensor::empty({channels}, DType::f32, device));
    const Held shift = hold(Tensor::empty({channels}, DType::f32, device));
    const Held out = hold(Tensor::empty(forward ? shape.output_shape() : shape.filter_shape(),
                                        forward ? dtype : DType::f32, device));
    const Held stats_out =
        hold(Tensor::empty({2 * shape.out_channels + 1}, DType::f32, stream.device()));
    const int64_t scratch_numel =
        pass == Pass::forward         ? conv2d_forward_workspace_numel(shape, device)
        : pass == Pass::forward_stats ? conv2d_forward_stats_workspace_numel(shape, device, unsplit)
                                      : conv2d_backward_filter_workspace_numel(shape, device);
    const Held scratch = hold(workspace(scratch_numel, stream));
    const Held counters = hold(split_counters(
        shape, pass == Pass::backward_filter ? ConvPass::backward_filter : ConvPass::forward,
        stream));
    return Prepared{
        [=, &stream] {
          if (statistics == Statistics::running) {
            conv_input_from_running_stats({.running_mean = *mean_in,
                                           .running_var = *var_in,
                                           .weight = *weight,
                                           .bias = *bias,
                                           .scale = *scale,
                                           .shift = *shift,
                                           .eps = kEvalEps},
                                          stream);
          } else {
            conv_input_from_batchnorm({.batch_stats = *stats,
                                       .weight = *weight,
                                       .bias = *bias,
                                       .scale = *scale,
                                       .shift = *shift},
                                      stream);
          }
          const ConvInputAffine input{.scale = *scale, .shift = *shift, .relu = true};
          if (pass == Pass::forward) {
            conv2d_forward(shape,
                           {.x = *in,
                            .w = *filters,
                            .bias = Tensor(),
                            .y = *out,
                            .workspace = *scratch,
                            .split_counters = *counters},
                           stream, {}, {.input = input});
          } else if (pass == Pass::forward_stats) {
            conv2d_forward(
                shape,
                {.x = *in, .w = *filters, .bias = Tensor(), .y = *out, .workspace = *scratch},
                stream, unsplit, {.stats = *stats_out, .input = input});
          } else {
            Tensor none;
            conv2d_backward_filter(shape,
                                   {.x = *in,
                                    .dy = *grad,
                                    .dw = *out,
                                    .dbias = none,
                                    .workspace = *scratch,
                                    .split_counters = *counters,
                                    .write = GradWrite::overwrite},
                                   stream, {}, input);
          }
        },
        [=, &stream] {
          std::vector<Output> outputs =
              pass == Pass::forward_stats
                  ? stats_outputs(*out, *stats_out, shape.out_channels, stream)
                  : std::vector<Output>{{forward ? "y" : "dw", host_values(*out, stream)}};
          outputs.push_back({"scale", host_values(*scale, stream), kExact});
          outputs.push_back({"shift", host_values(*shift, stream), kExact});
          return outputs;
        }};
  };
  cases.push_back(c);
}

std::vector<OpCase> bn_input_cases(const ModelShapes& model, DType dtype, Pass pass) {
  std::vector<OpCase> cases;
  if (dtype != DType::f32 && dtype != DType::bf16) return cases;
  for (const bench::ConvLayer& layer : model.conv_layers) {
    if (!reads_batchnorm_relu(layer.shape)) continue;
    add_case(cases, layer, dtype, pass);
    if (pass == Pass::forward) add_case(cases, layer, dtype, pass, Statistics::running);
  }
  return cases;
}

}  // namespace

const OpDescription& describe_conv2d_forward_bn_input() {
  static const OpDescription d{.id = OpId::conv2d_forward_bn_input,
                               .cases = [](const ModelShapes& model, DType dtype) {
                                 return bn_input_cases(model, dtype, Pass::forward);
                               }};
  return d;
}

const OpDescription& describe_conv2d_forward_stats_bn_input() {
  static const OpDescription d{.id = OpId::conv2d_forward_stats_bn_input,
                               .cases = [](const ModelShapes& model, DType dtype) {
                                 return bn_input_cases(model, dtype, Pass::forward_stats);
                               }};
  return d;
}

const OpDescription& describe_conv2d_backward_filter_bn_input() {
  static const OpDescription d{.id = OpId::conv2d_backward_filter_bn_input,
                               .cases = [](const ModelShapes& model, DType dtype) {
                                 return bn_input_cases(model, dtype, Pass::backward_filter);
                               }};
  return d;
}

}  // namespace engine::op_registry
