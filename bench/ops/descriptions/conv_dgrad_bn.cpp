// The data gradient that also does the backward reduction of the BatchNorm + ReLU its
// convolution read (conv2d_backward_data with Conv2dBackwardDataFusion, kernels/ops/conv.h:
// cuDNN's dgrad + drelu + dbn): dx gated by the ReLU's mask recomputed from x, and
// batchnorm_backward_reduce's grad_sums and parameter gradients of it. On the layers that read a
// BatchNorm + ReLU output in ResNet (3x3 stride 1 and pointwise 1x1), unsplit, so that bf16 takes
// the epilogue on the device (f32 exact, and the CPU: the plain gradient, then the reduce).
// On each block's first convolution also the residual kind: the identity branch's gradient
// added, then gated by the block before's stored output (Conv2dBackwardDataFusion's
// relu_output), as the next block's input gradient does the last BatchNorm's reduction.
// f32 exact and bf16 only, as conv_bn_input.cpp; tests/kernels/test_conv_dgrad_bn_simt.cpp
// covers tf32 and the fallbacks. No bench row (the plain passes' rows, conv.cpp, time the
// convolutions).
#include <algorithm>
#include <cmath>
#include <vector>

#include "bench/ops/case_kit.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

// batch_stats: means ~ N(0, 1) (as x's), invstd in [0.5, 1.5], a count; with weight and bias
// of both signs about half of the transformed values pass the ReLU.
Operand batch_stats_operand(int64_t channels) {
  Stream host;
  std::vector<float> values = host_normal({channels}, DType::f32, 41).to_floats(host);
  for (int64_t c = 0; c < channels; ++c)
    values.push_back(0.5f + static_cast<float>(c % 11) / 10.f);
  values.push_back(128.f);
  return Operand(Tensor::from_floats({2 * channels + 1}, values));
}

bool reads_batchnorm_relu(const Conv2dShape& s) {
  const bool pointwise = s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.pad_h == 0;
  const bool three_by_three = s.kernel_h == 3 && s.kernel_w == 3 && s.stride_h == 1;
  return s.in_channels > 3 && (pointwise || three_by_three);
}

// A residual block's first convolution (whose input is, but in layer1.0, the block before's
// output): the layer's name, e.g. "layer1.0.conv1 3x3 64->64", names the shape's first use.
bool first_of_block(const bench::ConvLayer& layer) {
  const std::string module = layer.name.substr(0, layer.name.find(' '));
  return module.starts_with("layer") && module.ends_with(".conv1");
}

void add_case(std::vector<OpCase>& cases, const bench::ConvLayer& layer, DType dtype,
              bool residual) {
  const Conv2dShape shape = layer.shape;
  const int64_t channels = shape.in_channels;
  const Operand x(shape.input_shape(), dtype, 42);
  const Operand w(shape.filter_shape(), dtype, 43, 0,
                  1.0 / std::sqrt(static_cast<double>(shape.gemm_k())));
  const Operand dy(shape.output_shape(), dtype, 44);
  const Operand stats = batch_stats_operand(channels);
  const Operand weight({channels}, DType::f32, 45, 0.0, 1.0);
  const Operand bias({channels}, DType::f32, 46, 0.0, 1.0);
  // Residual: the block before's output (~N(0, 1): about half passes) and the identity's
  // gradient.
  const Operand block_output(shape.input_shape(), dtype, 47);
  const Operand identity_grad(shape.input_shape(), dtype, 48);
  OpCase c;
  c.op = OpId::conv2d_backward_data_bn;
  c.name = layer.name + " " + shape_str(shape.input_shape()) +
           (residual ? " + add + batchnorm backward" : " + batchnorm backward");
  c.dtype = dtype;
  // dx follows the convolution's tolerance (the two sides' gradients differ by rounding; the
  // mask is x's alone, so both gate alike), and the sums follow dx: fp32 in tiles on the device,
  // fp64 on the CPU, agree to ~1e-6 of the same values.
  c.tolerance = dtype == DType::bf16 ? kBf16 : kGemmF32;
  c.why = dtype == DType::bf16 ? kBf16Why : kGemmF32Why;
  c.elements = std::max(shape_numel(shape.input_shape()), shape_numel(shape.output_shape()));
  c.bench = false;
  c.flops = 2.0 * static_cast<double>(shape.gemm_m()) * shape.out_channels * shape.gemm_k();
  const ConvAlgo unsplit{.split_k = 1};
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Device device = stream.device();
    const Held in = hold(x.on(stream, inputs));
    const Held filters = hold(w.on(stream, inputs));
    const Held grad = hold(dy.on(stream, inputs));
    const Held batch_stats = hold(stats.on(stream, Inputs::seeded));
    const Held gamma = hold(weight.on(stream, inputs));
    const Held beta = hold(bias.on(stream, inputs));
    const Held scale = hold(Tensor::empty({channels}, DType::f32, device));
    const Held shift = hold(Tensor::empty({channels}, DType::f32, device));
    const Held dx = hold(Tensor::empty(shape.input_shape(), dtype, device));
    const Held grad_sums = hold(Tensor::empty({2 * channels}, DType::f32, device));
    const Held bias_grad = hold(Tensor::empty({channels}, DType::f32, device));
    const Held weight_grad = hold(Tensor::empty({channels}, DType::f32, device));
    const Held scratch =
        hold(workspace(conv2d_backward_data_bn_workspace_numel(shape, device, unsplit), stream));
    const Held output = hold(residual ? block_output.on(stream, inputs) : Tensor());
    const Held add = hold(residual ? identity_grad.on(stream, inputs) : Tensor());
    return Prepared{
        [=, &stream] {
          Conv2dBackwardDataFusion fusion{.x = *in,
                                          .batch_stats = *batch_stats,
                                          .grad_sums = *grad_sums,
                                          .bias_grad = *bias_grad,
                                          .weight_grad = *weight_grad};
          if (residual) {
            fusion.relu_output = *output;
          } else {
            conv_input_from_batchnorm({.batch_stats = *batch_stats,
                                       .weight = *gamma,
                                       .bias = *beta,
                                       .scale = *scale,
                                       .shift = *shift},
                                      stream);
            fusion.input = {.scale = *scale, .shift = *shift, .relu = true};
          }
          conv2d_backward_data(
              shape, {.dy = *grad, .w = *filters, .dx = *dx, .workspace = *scratch, .add = *add},
              stream, unsplit, fusion);
        },
        [=, &stream] {
          return std::vector<Output>{{"dx", host_values(*dx, stream)},
                                     {"grad_sums", host_values(*grad_sums, stream)},
                                     {"bias_grad", host_values(*bias_grad, stream)},
                                     {"weight_grad", host_values(*weight_grad, stream)}};
        }};
  };
  cases.push_back(c);
}

std::vector<OpCase> dgrad_bn_cases(const ModelShapes& model, DType dtype) {
  std::vector<OpCase> cases;
  if (dtype != DType::f32 && dtype != DType::bf16) return cases;
  for (const bench::ConvLayer& layer : model.conv_layers) {
    if (!reads_batchnorm_relu(layer.shape)) continue;
    add_case(cases, layer, dtype, false);
    if (first_of_block(layer)) add_case(cases, layer, dtype, true);
  }
  return cases;
}

}  // namespace

const OpDescription& describe_conv2d_backward_data_bn() {
  static const OpDescription d{.id = OpId::conv2d_backward_data_bn, .cases = dgrad_bn_cases};
  return d;
}

}  // namespace engine::op_registry
