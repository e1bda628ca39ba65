// The forward convolution that also gives BatchNorm's statistics of its output
// (conv2d_forward with Conv2dForwardFusion::stats): every distinct layer of the network, as a
// training BatchNorm follows each. Unsplit, so that bf16 and tf32 take the statistics from the
// tensor-core engine's epilogue on the device (the f32 SIMT engine, and the CPU, by
// batchnorm_stats after the convolution); tests/kernels/test_conv_stats_simt.cpp covers the
// fallbacks. Checked against the CPU's convolution and batchnorm_stats; no bench row (the
// plain passes' rows, conv.cpp, time the convolutions).
#include <cmath>

#include "bench/ops/case_kit.h"
#include "bench/ops/descriptions/stats_outputs.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

// For the CPU reference of a tf32 case, the operand rounded to tf32 as the tensor cores round
// it (as the conv descriptions do).
Tensor stats_conv_operand(const Operand& operand, Stream& stream, Inputs inputs, Fp32Math math) {
  Tensor t = operand.on(stream, inputs);
  if (math != Fp32Math::tf32 || !stream.device().is_cpu()) return t;
  std::vector<float> values = t.to_floats(stream);
  for (float& v : values)
    v = round_to_tf32(v);
  return Tensor::from_floats(t.shape(), values);
}

void add_layer_case(std::vector<OpCase>& cases, const bench::ConvLayer& layer, DType dtype,
                    Fp32Math math) {
  const Conv2dShape shape = layer.shape;
  const bool tf32 = math == Fp32Math::tf32;
  const Operand x(shape.input_shape(), dtype, 11);
  const Operand w(shape.filter_shape(), dtype, 12, 0,
                  1.0 / std::sqrt(static_cast<double>(shape.gemm_k())));
  OpCase c;
  c.op = OpId::conv2d_forward_stats;
  c.name = layer.name + " " + shape_str(shape.input_shape()) + " + batchnorm stats";
  c.dtype = dtype;
  // The statistics follow y's tolerance: the two sides' outputs differ by the convolution's
  // rounding (bf16: an ulp here and there), which moves means and variances by as much at
  // most; the sums over rows themselves agree to ~1e-6 (fp32 in tiles and Chan merges on the
  // device, fp64 on the CPU).
  c.tolerance = dtype == DType::bf16 ? kBf16 : tf32 ? kTf32 : kGemmF32;
  c.why = dtype == DType::bf16 ? kBf16Why : tf32 ? kTf32Why : kGemmF32Why;
  c.elements = std::max(shape_numel(shape.input_shape()), shape_numel(shape.output_shape()));
  c.fp32_math = math;
  c.bench = false;
  c.flops = 2.0 * static_cast<double>(shape.gemm_m()) * shape.out_channels * shape.gemm_k();
  const ConvAlgo unsplit{.split_k = 1};
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Held xs = hold(stats_conv_operand(x, stream, inputs, math));
    const Held ws = hold(stats_conv_operand(w, stream, inputs, math));
    const Held y = hold(Tensor::empty(shape.output_shape(), dtype, stream.device()));
    const Held stats =
        hold(Tensor::empty({2 * shape.out_channels + 1}, DType::f32, stream.device()));
    const Held scratch = hold(
        workspace(conv2d_forward_stats_workspace_numel(shape, stream.device(), unsplit), stream));
    return Prepared{[=, &stream] {
                      conv2d_forward(
                          shape,
                          {.x = *xs, .w = *ws, .bias = Tensor(), .y = *y, .workspace = *scratch},
                          stream, unsplit, {.stats = *stats});
                    },
                    [=, &stream] { return stats_outputs(*y, *stats, shape.out_channels, stream); }};
  };
  cases.push_back(c);
}

std::vector<OpCase> conv_stats_cases(const ModelShapes& model, DType dtype) {
  std::vector<OpCase> cases;
  if (dtype != DType::f32 && dtype != DType::bf16) return cases;
  for (const bench::ConvLayer& layer : model.conv_layers) {
    add_layer_case(cases, layer, dtype, Fp32Math::exact);
    if (dtype == DType::f32) add_layer_case(cases, layer, dtype, Fp32Math::tf32);
  }
  return cases;
}

}  // namespace

std::vector<Output> stats_outputs(const Tensor& y, const Tensor& stats, int64_t channels,
                                  Stream& stream) {
  const std::vector<double> s = host_values(stats, stream);
  const double count = s[2 * channels];
  std::vector<double> mean(s.begin(), s.begin() + channels), variance(channels);
  for (int64_t c = 0; c < channels; ++c)
    variance[c] = s[channels + c] / count;
  return {{"y", host_values(y, stream)},
          {"mean", mean, -1, 1.0},
          {"variance", variance},
          {"count", {count}, 0.0}};
}

const OpDescription& describe_conv2d_forward_stats() {
  static const OpDescription d{.id = OpId::conv2d_forward_stats, .cases = conv_stats_cases};
  return d;
}

}  // namespace engine::op_registry
