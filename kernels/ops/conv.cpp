#include "kernels/ops/conv.h"

#include <string>
#include <utility>

#include "kernels/cpu/conv.h"
#include "kernels/cuda/conv.h"
#include "kernels/error.h"
#include "kernels/ops/activation.h"
#include "kernels/ops/batchnorm_finalize.h"
#include "kernels/ops/checks.h"
#include "kernels/ops/dispatch.h"

namespace engine {

namespace {

void require_grad_dtype(ops::OpName op, const Tensor& dw, DType activation_dtype) {
  if (dw.dtype() != DType::f32 && dw.dtype() != activation_dtype) {
    fail(std::string(op) + ": dw is " + dw.describe() + ", expected f32 or " +
         std::string(dtype_name(activation_dtype)));
  }
}

// The pointwise convolution a linear layer is: rows of x are pixels.
Conv2dShape pointwise_shape(int64_t rows, int64_t in_features, int64_t out_features) {
  Conv2dShape shape;
  shape.batch = rows;
  shape.in_channels = in_features;
  shape.out_channels = out_features;
  return shape;
}

Conv2dShape linear_shape(const Tensor& x_or_dx, const Tensor& w, ops::OpName op) {
  if (x_or_dx.dim() != 2 || w.dim() != 2) {
    fail(std::string(op) + ": expected 2-D tensors, got " + x_or_dx.describe() + " and w " +
         w.describe());
  }
  return pointwise_shape(x_or_dx.size(0), w.size(1), w.size(0));
}

Tensor as_image(const Tensor& rows, int64_t channels) {
  return rows.reshape({rows.size(0), 1, 1, channels});
}

// f32 elements of bytes(shape, cuda_stream) of CUDA workspace; 0 on the CPU, whose passes need
// none. `bytes` is a generic lambda called from on_device's CUDA branch, so that a build
// without CUDA never refers to the cuda:: function it calls.
template <typename Bytes>
int64_t workspace_numel(std::string_view what, const Conv2dShape& shape, Device device,
                        Bytes&& bytes) {
  shape.validate();
  int64_t numel = 0;
  ops::on_device(
      what, device, nullptr, [] {},
      [&](auto cuda_stream) {
        numel =
            static_cast<int64_t>((bytes(shape, cuda_stream) + sizeof(float) - 1) / sizeof(float));
      });
  return numel;
}

// What the statistics' merge finishes (fusion.batchnorm, checked): the sums, and the finalize
// where batch_stats is defined. Undefined tensors: nothing.
struct StatsPhases {
  double* sums = nullptr;
  BatchNormFinalizeSumsArgs finalize = {};
};
StatsPhases stats_phases(ops::OpName op, const BatchNormStatsFusion& fusion, int64_t channels,
                         Device device) {
  StatsPhases phases;
  Tensor sums = fusion.sums;
  if (sums.defined()) {
    ops::require_f64(op, "sums", sums, 2 * channels + 1, device);
    phases.sums = sums.data<double>();
  }
  ENGINE_REQUIRE(phases.sums != nullptr || !fusion.batch_stats.defined(),
                 std::string(op) + ": finalizing into batch_stats needs the sums");
  phases.finalize = ops::finalize_args(op, phases.sums, channels, device,
                                       {.batch_stats = fusion.batch_stats,
                                        .running_mean = fusion.running_mean,
                                        .running_var = fusion.running_var,
                                        .constants = fusion.constants,
                                        .conv_input = fusion.conv_input});
  return phases;
}

// The kernels' transform of `input`, checked against x's channels and device: none where
// input.scale is undefined.
ConvInputTransform input_transform(ops::OpName op, const ConvInputAffine& input,
                                   const Conv2dShape& shape, Device device) {
  if (!input.scale.defined()) {
    if (input.shift.defined()) fail(std::string(op) + ": input.shift without input.scale");
    return {};
  }
  ops::require_f32(op, "input.scale", input.scale, shape.in_channels, device);
  ops::require_f32(op, "input.shift", input.shift, shape.in_channels, device);
  return {
      .scale = input.scale.data<float>(), .shift = input.shift.data<float>(), .relu = input.relu};
}

// The split-K counters for `pass` (conv2d_split_counters_numel), checked: null where they are
// undefined (a second launch sums the partials) or the pass does not split.
unsigned* split_counters(ops::OpName op, Tensor& counters, const Conv2dShape& shape, ConvPass pass,
                         Device device, const ConvAlgo& algo) {
  if (!counters.defined()) return nullptr;
  const int64_t needed = conv2d_split_counters_numel(shape, pass, device, algo);
  if (needed == 0) return nullptr;
  if (counters.dtype() != DType::i32 || counters.numel() < needed || counters.device() != device) {
    fail(std::string(op) + ": split_counters is " + counters.describe() +
         ", expected i32 with at least " + std::to_string(needed) + " elements on " + device.str() +
         " (conv2d_split_counters_numel)");
  }
  return reinterpret_cast<unsigned*>(counters.data<int32_t>());
}

}  // namespace

int64_t conv2d_split_counters_numel(const Conv2dShape& shape, ConvPass pass, Device device,
                                    const ConvAlgo& algo) {
  return workspace_numel(
      "conv2d_split_counters_numel", shape, device,
      [&](const Conv2dShape& s, auto) { return cuda::conv2d_split_counters_bytes(s, pass, algo); });
}

void conv2d_forward(const Conv2dShape& shape, Conv2dForwardOperands operands, Stream& stream,
                    const ConvAlgo& algo, const Conv2dForwardFusion& fusion) {
  constexpr ops::OpName op{"conv2d_forward"};
  shape.validate();
  ops::require_float(op, "x", operands.x);
  const DType dtype = operands.x.dtype();
  const Device device = operands.x.device();
  const std::string context = shape.str();
  ops::require_exact(op, "x", operands.x, shape.input_shape(), dtype, device, context);
  ops::require_exact(op, "w", operands.w, shape.filter_shape(), dtype, device, context);
  ops::require_exact(op, "y", operands.y, shape.output_shape(), dtype, device, context);
  if (operands.bias.defined())
    ops::require_exact(op, "bias", operands.bias, {shape.out_channels}, DType::f32, device,
                       context);
  float* stats = nullptr;
  StatsPhases phases;
  if (fusion.stats.defined()) {
    ops::require_f32(op, "stats", fusion.stats, 2 * shape.out_channels + 1, device);
    Tensor stats_tensor = fusion.stats;  // a handle: the fusion struct is const, not its data
    stats = stats_tensor.data<float>();
    phases = stats_phases(op, fusion.batchnorm, shape.out_channels, device);
  } else {
    ENGINE_REQUIRE(!fusion.batchnorm.sums.defined() && !fusion.batchnorm.batch_stats.defined(),
                   std::string(op) + ": the statistics' sums and finalize need stats");
  }
  float* scratch = nullptr;
  if (stats != nullptr) {
    const int64_t needed = conv2d_forward_stats_workspace_numel(shape, device, algo);
    ENGINE_REQUIRE(
        operands.workspace.defined() || needed == 0,
        std::string(op) + ": stats need a workspace (conv2d_forward_stats_workspace_numel)");
    if (operands.workspace.defined())
      scratch = ops::require_workspace(op, operands.workspace, needed, device,
                                       "conv2d_forward_stats_workspace_numel");
  } else if (operands.workspace.defined()) {
    scratch = ops::require_workspace(op, operands.workspace,
                                     conv2d_forward_workspace_numel(shape, device, algo), device,
                                     "conv2d_forward_workspace_numel");
  }
  ops::require_on_stream(op, "x", operands.x, stream);
  const Conv2dForwardArgs args{
      .shape = shape,
      .dtype = dtype,
      .x = operands.x.raw_data(),
      .w = operands.w.raw_data(),
      .bias = operands.bias.defined() ? operands.bias.data<float>() : nullptr,
      .y = operands.y.raw_data(),
      .workspace = scratch,
      .split_counters = stats != nullptr ? nullptr
                                         : split_counters(op, operands.split_counters, shape,
                                                          ConvPass::forward, device, algo),
      .fp32_math = stream.fp32_math(),
      .algo = algo,
      .stats = stats,
      .stats_sums = phases.sums,
      .stats_finalize = phases.finalize,
      .input_transform = input_transform(op, fusion.input, shape, device)};
  ops::on_device(
      op, stream, [&] { cpu::conv2d_forward(args); },
      [&](auto cuda_stream) {
        if (stats != nullptr) {
          cuda::conv2d_forward_stats(args, cuda_stream);
        } else {
          cuda::conv2d_forward(args, cuda_stream);
        }
      });
}

namespace {

// The kernels' ConvDataGradBatchNorm of `fusion`, checked against dx (none: x undefined).
ConvDataGradBatchNorm data_grad_batchnorm(ops::OpName op, const Conv2dBackwardDataFusion& fusion,
                                          const Conv2dShape& shape, const Tensor& dx) {
  if (!fusion.x.defined()) {
    ENGINE_REQUIRE(!fusion.grad_sums.defined() && !fusion.batch_stats.defined() &&
                       !fusion.bias_grad.defined() && !fusion.weight_grad.defined(),
                   std::string(op) + ": the BatchNorm's backward (fusion) needs its input x");
    return {};
  }
  const Device device = dx.device();
  const int64_t channels = shape.in_channels;
  ops::require_exact(op, "fusion.x", fusion.x, shape.input_shape(), dx.dtype(), device,
                     shape.str());
  ops::require_f32(op, "fusion.batch_stats", fusion.batch_stats, 2 * channels + 1, device);
  ConvInputTransform transform;
  if (fusion.relu_output.defined()) {
    ops::require_exact(op, "fusion.relu_output", fusion.relu_output, shape.input_shape(),
                       dx.dtype(), device, shape.str());
    ENGINE_REQUIRE(!fusion.input.scale.defined(),
                   std::string(op) + ": fusion.relu_output and fusion.input exclude each other");
  } else {
    ops::require_defined(op, "fusion.input.scale", fusion.input.scale);
    ENGINE_REQUIRE(fusion.input.relu,
                   std::string(op) + ": fusion.input must be the ReLU's transform (relu = true)");
    transform = input_transform(op, fusion.input, shape, device);
  }
  ops::require_f32(op, "fusion.grad_sums", fusion.grad_sums, 2 * channels, device);
  Tensor grad_sums = fusion.grad_sums, bias_grad = fusion.bias_grad,
         weight_grad = fusion.weight_grad;  // handles: the fusion struct is const, not its data
  return {.x = fusion.x.raw_data(),
          .batch_stats = fusion.batch_stats.data<float>(),
          .relu_scale = transform.scale,
          .relu_shift = transform.shift,
          .relu_output = ops::optional_data(fusion.relu_output),
          .grad_sums = grad_sums.data<float>(),
          .bias_grad = ops::optional_f32(op, "fusion.bias_grad", bias_grad, channels, device),
          .weight_grad = ops::optional_f32(op, "fusion.weight_grad", weight_grad, channels, device),
          .accumulate = fusion.write == GradWrite::accumulate};
}

}  // namespace

void conv2d_backward_data(const Conv2dShape& shape, Conv2dBackwardDataOperands operands,
                          Stream& stream, const ConvAlgo& algo,
                          const Conv2dBackwardDataFusion& fusion) {
  constexpr ops::OpName op{"conv2d_backward_data"};
  shape.validate();
  ops::require_float(op, "dy", operands.dy);
  const DType dtype = operands.dy.dtype();
  const Device device = operands.dy.device();
  const std::string context = shape.str();
  ops::require_exact(op, "dy", operands.dy, shape.output_shape(), dtype, device, context);
  ops::require_exact(op, "w", operands.w, shape.filter_shape(), dtype, device, context);
  ops::require_exact(op, "dx", operands.dx, shape.input_shape(), dtype, device, context);
  const ConvDataGradBatchNorm batchnorm = data_grad_batchnorm(op, fusion, shape, operands.dx);
  float* scratch = nullptr;
  if (batchnorm.active()) {
    const int64_t needed = conv2d_backward_data_bn_workspace_numel(shape, device, algo);
    ENGINE_REQUIRE(operands.workspace.defined() || needed == 0,
                   std::string(op) +
                       ": the BatchNorm's backward needs a workspace "
                       "(conv2d_backward_data_bn_workspace_numel)");
    if (operands.workspace.defined())
      scratch = ops::require_workspace(op, operands.workspace, needed, device,
                                       "conv2d_backward_data_bn_workspace_numel");
  } else if (operands.workspace.defined()) {
    scratch = ops::require_workspace(op, operands.workspace,
                                     conv2d_backward_data_workspace_numel(shape, device, algo),
                                     device, "conv2d_backward_data_workspace_numel");
  }
  if (operands.add.defined()) {
    ops::require_exact(op, "add", operands.add, shape.input_shape(), dtype, device, context);
    ENGINE_REQUIRE(!batchnorm.active() || batchnorm.relu_output != nullptr,
                   std::string(op) +
                       ": add with the BatchNorm's backward (fusion.x) needs fusion.relu_output "
                       "(the residual's ReLU output), not fusion.input");
  }
  ops::require_on_stream(op, "dy", operands.dy, stream);
  Conv2dBackwardDataArgs args{
      .shape = shape,
      .dtype = dtype,
      .dy = operands.dy.raw_data(),
      .w = operands.w.raw_data(),
      .dx = operands.dx.raw_data(),
      .dx_add = ops::optional_data(operands.add),
      .workspace = scratch,
      .split_counters = batchnorm.active() ? nullptr
                                           : split_counters(op, operands.split_counters, shape,
                                                            ConvPass::backward_data, device, algo),
      .fp32_math = stream.fp32_math(),
      .algo = algo,
      .batchnorm = batchnorm};
  bool add_after = false;
  ops::on_device(
      op, stream, [&] { cpu::conv2d_backward_data(args); },
      [&](auto cuda_stream) {
        if (batchnorm.active()) {
          cuda::conv2d_backward_data_bn(args, cuda_stream);
          return;
        }
        if (args.dx_add != nullptr && !cuda::conv2d_backward_data_adds(args)) {
          args.dx_add = nullptr;
          add_after = true;
        }
        cuda::conv2d_backward_data(args, cuda_stream);
      });
  if (add_after) add({.a = operands.dx, .b = operands.add, .y = operands.dx}, stream);
}

int64_t conv2d_forward_workspace_numel(const Conv2dShape& shape, Device device,
                                       const ConvAlgo& algo) {
  return workspace_numel(
      "conv2d_forward_workspace_numel", shape, device,
      [&](const Conv2dShape& s, auto) { return cuda::conv2d_forward_workspace_bytes(s, algo); });
}

int64_t conv2d_backward_data_workspace_numel(const Conv2dShape& shape, Device device,
                                             const ConvAlgo& algo) {
  return workspace_numel("conv2d_backward_data_workspace_numel", shape, device,
                         [&](const Conv2dShape& s, auto) {
                           return cuda::conv2d_backward_data_workspace_bytes(s, algo);
                         });
}

int64_t conv2d_forward_stats_workspace_numel(const Conv2dShape& shape, Device device,
                                             const ConvAlgo& algo) {
  return workspace_numel("conv2d_forward_stats_workspace_numel", shape, device,
                         [&](const Conv2dShape& s, auto) {
                           return cuda::conv2d_forward_stats_workspace_bytes(s, algo);
                         });
}

ConvStatsPath conv2d_forward_stats_path(const Conv2dShape& shape,
                                        const Conv2dForwardOperands& operands, Stream& stream,
                                        const ConvAlgo& algo) {
  constexpr ops::OpName op{"conv2d_forward_stats_path"};
  shape.validate();
  const Tensor& y = operands.y;
  ops::require_float(op, "y", y);
  ops::require_exact(op, "y", y, shape.output_shape(), y.dtype(), y.device(), shape.str());
  ConvStatsPath path = ConvStatsPath::separate_pass;  // the CPU's: batchnorm_stats after
  ops::on_device(
      op, stream, [] {},
      [&](auto) {
        path = cuda::conv2d_forward_stats_path(
            {.shape = shape,
             .dtype = y.dtype(),
             .bias = operands.bias.defined() ? operands.bias.data<float>() : nullptr,
             .y = const_cast<void*>(y.raw_data()),
             .fp32_math = stream.fp32_math(),
             .algo = algo});
      });
  return path;
}

int64_t conv2d_backward_data_bn_workspace_numel(const Conv2dShape& shape, Device device,
                                                const ConvAlgo& algo) {
  return workspace_numel("conv2d_backward_data_bn_workspace_numel", shape, device,
                         [&](const Conv2dShape& s, auto) {
                           return cuda::conv2d_backward_data_bn_workspace_bytes(s, algo);
                         });
}

ConvStatsPath conv2d_backward_data_bn_path(const Conv2dShape& shape,
                                           const Conv2dBackwardDataOperands& operands,
                                           const Conv2dBackwardDataFusion& fusion, Stream& stream,
                                           const ConvAlgo& algo) {
  constexpr ops::OpName op{"conv2d_backward_data_bn_path"};
  shape.validate();
  const Tensor& dx = operands.dx;
  ops::require_float(op, "dx", dx);
  ops::require_exact(op, "dx", dx, shape.input_shape(), dx.dtype(), dx.device(), shape.str());
  ops::require_exact(op, "fusion.x", fusion.x, shape.input_shape(), dx.dtype(), dx.device(),
                     shape.str());
  ConvStatsPath path = ConvStatsPath::separate_pass;  // the CPU's: the reduce after
  ops::on_device(
      op, stream, [] {},
      [&](auto) {
        // Only the pointers' alignment and the engine decide; the rest of the fusion is unread.
        path = cuda::conv2d_backward_data_bn_path(
            {.shape = shape,
             .dtype = dx.dtype(),
             .dx = const_cast<void*>(dx.raw_data()),
             .dx_add = ops::optional_data(operands.add),
             .fp32_math = stream.fp32_math(),
             .algo = algo,
             .batchnorm = {.x = fusion.x.raw_data(),
                           .relu_output = ops::optional_data(fusion.relu_output)}});
      });
  return path;
}

int64_t conv2d_backward_filter_workspace_numel(const Conv2dShape& shape, Device device,
                                               const ConvAlgo& algo) {
  return workspace_numel("conv2d_backward_filter_workspace_numel", shape, device,
                         [&](const Conv2dShape& s, auto) {
                           return cuda::conv2d_backward_filter_workspace_bytes(s, algo);
                         });
}

void conv2d_backward_filter(const Conv2dShape& shape, Conv2dBackwardFilterOperands operands,
                            Stream& stream, const ConvAlgo& algo, const ConvInputAffine& input) {
  constexpr ops::OpName op{"conv2d_backward_filter"};
  shape.validate();
  ops::require_float(op, "x", operands.x);
  ops::require_defined(op, "dw", operands.dw);
  const DType dtype = operands.x.dtype();
  const Device device = operands.x.device();
  const std::string context = shape.str();
  ops::require_exact(op, "x", operands.x, shape.input_shape(), dtype, device, context);
  ops::require_exact(op, "dy", operands.dy, shape.output_shape(), dtype, device, context);
  require_grad_dtype(op, operands.dw, dtype);
  ops::require_exact(op, "dw", operands.dw, shape.filter_shape(), operands.dw.dtype(), device,
                     context);
  if (operands.dbias.defined())
    ops::require_exact(op, "dbias", operands.dbias, {shape.out_channels}, DType::f32, device,
                       context);
  float* scratch = ops::require_workspace(
      op, operands.workspace, conv2d_backward_filter_workspace_numel(shape, device, algo), device,
      "conv2d_backward_filter_workspace_numel");
  ops::require_on_stream(op, "x", operands.x, stream);
  const Conv2dBackwardFilterArgs args{
      .shape = shape,
      .dtype = dtype,
      .x = operands.x.raw_data(),
      .dy = operands.dy.raw_data(),
      .dw_dtype = operands.dw.dtype(),
      .dw = operands.dw.raw_data(),
      .dbias = operands.dbias.defined() ? operands.dbias.data<float>() : nullptr,
      .accumulate = operands.write == GradWrite::accumulate,
      .workspace = scratch,
      .split_counters = split_counters(op, operands.split_counters, shape,
                                       ConvPass::backward_filter, device, algo),
      .fp32_math = stream.fp32_math(),
      .algo = algo,
      .input_transform = input_transform(op, input, shape, device)};
  if (args.input_transform.active() && operands.dw.dtype() != DType::f32) {
    fail(std::string(op) + ": dw is " + operands.dw.describe() +
         ", expected f32 with an input transform (fp32 master weights)");
  }
  ops::on_device(
      op, stream, [&] { cpu::conv2d_backward_filter(args); },
      [&](auto cuda_stream) { cuda::conv2d_backward_filter(args, cuda_stream); });
}

namespace {

// conv_input_from_batchnorm's launch once args holds its statistics: the affine parameters and
// outputs checked against `channels` on `device`.
void convert_to_conv_input(ops::OpName op, ConvInputFromBatchNormArgs args, int64_t channels,
                           Device device, const Tensor& weight, const Tensor& bias, Tensor& scale,
                           Tensor& shift, Stream& stream) {
  ops::require_f32(op, "scale", scale, channels, device);
  ops::require_f32(op, "shift", shift, channels, device);
  ops::require_on_stream(op, "scale", scale, stream);
  args.weight = ops::optional_f32(op, "weight", weight, channels, device);
  args.bias = ops::optional_f32(op, "bias", bias, channels, device);
  args.channels = channels;
  args.scale = scale.data<float>();
  args.shift = shift.data<float>();
  ops::on_device(
      op, stream, [&] { cpu::conv_input_from_batchnorm(args); },
      [&](auto cuda_stream) { cuda::conv_input_from_batchnorm(args, cuda_stream); });
}

}  // namespace

void conv_input_from_batchnorm(ConvInputFromBatchNormOperands operands, Stream& stream) {
  constexpr ops::OpName op{"conv_input_from_batchnorm"};
  ops::require_defined(op, "batch_stats", operands.batch_stats);
  const int64_t numel = operands.batch_stats.numel();
  if (numel < 3 || numel % 2 != 1) {
    fail(std::string(op) + ": batch_stats is " + operands.batch_stats.describe() +
         ", expected 2C+1 elements for C channels");
  }
  const int64_t channels = (numel - 1) / 2;
  const Device device = operands.batch_stats.device();
  ops::require_f32(op, "batch_stats", operands.batch_stats, numel, device);
  convert_to_conv_input(op, {.batch_stats = operands.batch_stats.data<float>()}, channels, device,
                        operands.weight, operands.bias, operands.scale, operands.shift, stream);
}

void conv_input_from_running_stats(ConvInputFromRunningStatsOperands operands, Stream& stream) {
  constexpr ops::OpName op{"conv_input_from_running_stats"};
  ops::require_defined(op, "running_mean", operands.running_mean);
  const int64_t channels = operands.running_mean.numel();
  const Device device = operands.running_mean.device();
  ops::require_f32(op, "running_mean", operands.running_mean, channels, device);
  ops::require_f32(op, "running_var", operands.running_var, channels, device);
  if (!(operands.eps > 0.f))
    fail(std::string(op) + ": eps must be > 0, got " + std::to_string(operands.eps));
  convert_to_conv_input(op,
                        {.running_mean = operands.running_mean.data<float>(),
                         .running_var = operands.running_var.data<float>(),
                         .eps = operands.eps},
                        channels, device, operands.weight, operands.bias, operands.scale,
                        operands.shift, stream);
}

std::vector<ConvAlgo> conv2d_algo_candidates(const ConvProblem& problem, Device device) {
  problem.shape.validate();
  std::vector<ConvAlgo> candidates;
  ops::on_device(
      "conv2d_algo_candidates", device, nullptr, [] {},
      [&](auto) { candidates = cuda::conv2d_candidates(problem); });
  return candidates;
}

void linear_forward(LinearForwardOperands operands, Stream& stream) {
  const Conv2dShape shape = linear_shape(operands.x, operands.w, ops::OpName{"linear_forward"});
  conv2d_forward(
      shape,
      {.x = as_image(operands.x, shape.in_channels),
       .w = operands.w.reshape(shape.filter_shape()),
       .bias = std::move(operands.bias),
       .y = operands.y.reshape({operands.y.numel() / shape.out_channels, 1, 1, shape.out_channels}),
       .workspace = {}},
      stream);
}

void linear_backward_data(LinearBackwardDataOperands operands, Stream& stream) {
  const Conv2dShape shape =
      linear_shape(operands.dx, operands.w, ops::OpName{"linear_backward_data"});
  conv2d_backward_data(shape,
                       {.dy = as_image(operands.dy, shape.out_channels),
                        .w = operands.w.reshape(shape.filter_shape()),
                        .dx = as_image(operands.dx, shape.in_channels),
                        .workspace = {}},
                       stream);
}

int64_t linear_backward_weight_workspace_numel(const LinearShape& shape, Device device) {
  return conv2d_backward_filter_workspace_numel(
      pointwise_shape(shape.rows, shape.in_features, shape.out_features), device);
}

void linear_backward_weight(LinearBackwardWeightOperands operands, Stream& stream) {
  const Conv2dShape shape =
      linear_shape(operands.x, operands.dw, ops::OpName{"linear_backward_weight"});
  conv2d_backward_filter(shape,
                         {.x = as_image(operands.x, shape.in_channels),
                          .dy = as_image(operands.dy, shape.out_channels),
                          .dw = operands.dw.reshape(shape.filter_shape()),
                          .dbias = std::move(operands.dbias),
                          .workspace = std::move(operands.workspace),
                          .write = operands.write},
                         stream);
}

}  // namespace engine
