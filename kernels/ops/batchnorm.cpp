#include "kernels/ops/batchnorm.h"

#include <string>

#include "kernels/cpu/batchnorm.h"
#include "kernels/cuda/batchnorm.h"
#include "kernels/ops/batchnorm_finalize.h"
#include "kernels/ops/checks.h"
#include "kernels/ops/dispatch.h"

namespace engine {
namespace {

// The [rows, C] view of an activation: C is the innermost (last) dimension.
struct Rows {
  int64_t rows = 0;
  int64_t channels = 0;
};

Rows require_activation(ops::OpName op, std::string_view name, const Tensor& x) {
  ops::require_float(op, name, x);
  if (x.dim() < 2 || x.numel() == 0) {
    fail(std::string(op) + ": " + std::string(name) + " is " + x.describe() +
         ", expected a non-empty [..., C] activation (NHWC)");
  }
  const int64_t channels = x.size(x.dim() - 1);
  return {x.numel() / channels, channels};
}

// C from a per-channel vector of 2C+1 elements (stats, sums, batch_stats).
int64_t per_channel_count(ops::OpName op, std::string_view name, const Tensor& t) {
  ops::require_defined(op, name, t);
  const int64_t numel = t.numel();
  if (numel < 3 || numel % 2 != 1) {
    fail(std::string(op) + ": " + std::string(name) + " is " + t.describe() +
         ", expected 2C+1 elements for C channels");
  }
  return (numel - 1) / 2;
}

const void* optional_residual(ops::OpName op, const BatchNormEpilogue& epilogue, const Tensor& x) {
  if (!epilogue.residual.defined()) return nullptr;
  ops::require_like(op, "x", x, "residual", epilogue.residual);
  return epilogue.residual.raw_data();
}

// A fused ReLU's gate for the backward passes, checked: its output y (like x), or the
// per-channel scale and shift that recompute it from x (f32[C] each, on x's device), or none.
struct ReluGateArgs {
  const void* output = nullptr;
  const float* scale = nullptr;
  const float* shift = nullptr;
  bool active() const { return output != nullptr || scale != nullptr; }
};
ReluGateArgs relu_gate_args(ops::OpName op, const BatchNormReluGate& relu, const Tensor& x,
                            int64_t channels) {
  const std::string name(op);
  ENGINE_REQUIRE(relu.scale.defined() == relu.shift.defined(),
                 name + ": relu.scale and relu.shift come together (both or neither)");
  ENGINE_REQUIRE(!relu.output.defined() || !relu.scale.defined(),
                 name +
                     ": relu.output and relu.scale/shift exclude each other: the mask is "
                     "read from the stored y or recomputed from x, not both");
  if (relu.output.defined()) {
    ops::require_like(op, "x", x, "relu.output", relu.output);
    return {.output = relu.output.raw_data()};
  }
  if (!relu.scale.defined()) return {};
  ops::require_f32(op, "relu.scale", relu.scale, channels, x.device());
  ops::require_f32(op, "relu.shift", relu.shift, channels, x.device());
  return {.scale = relu.scale.data<float>(), .shift = relu.shift.data<float>()};
}

}  // namespace

int64_t batchnorm_workspace_numel(const Tensor& x) {
  constexpr ops::OpName op{"batchnorm_workspace_numel"};
  const Rows shape = require_activation(op, "x", x);
  int64_t numel = 0;  // the CPU passes need no scratch
  ops::on_device(
      op, x.device(), nullptr, [] {},
      [&](auto) { numel = cuda::batchnorm_workspace_numel(shape.rows, shape.channels); });
  return numel;
}

void batchnorm_stats(BatchNormStatsOperands operands, Stream& stream,
                     const BatchNormStatsFusion& fusion) {
  constexpr ops::OpName op{"batchnorm_stats"};
  const Rows shape = require_activation(op, "x", operands.x);
  const Device device = operands.x.device();
  const int64_t per_channel = batchnorm_stats_numel(shape.channels);
  ops::require_f32(op, "stats", operands.stats, per_channel, device);
  float* scratch =
      ops::require_workspace(op, operands.workspace, batchnorm_workspace_numel(operands.x), device,
                             "batchnorm_workspace_numel");
  Tensor sums = fusion.sums, batch_stats = fusion.batch_stats;
  Tensor running_mean = fusion.running_mean, running_var = fusion.running_var;
  double* sums_data = nullptr;
  if (sums.defined()) {
    ops::require_f64(op, "sums", sums, per_channel, device);
    sums_data = sums.data<double>();
  }
  const float* finalizing = ops::optional_f32(op, "batch_stats", batch_stats, per_channel, device);
  ENGINE_REQUIRE(finalizing == nullptr || sums_data != nullptr,
                 std::string(op) + ": finalizing into batch_stats needs the sums");
  const BatchNormFinalizeSumsArgs finalize =
      ops::finalize_args(op, sums_data, shape.channels, device,
                         {.batch_stats = batch_stats,
                          .running_mean = running_mean,
                          .running_var = running_var,
                          .constants = fusion.constants,
                          .conv_input = fusion.conv_input});
  ops::require_on_stream(op, "x", operands.x, stream);
  const BatchNormStatsArgs args{.dtype = operands.x.dtype(),
                                .x = operands.x.raw_data(),
                                .rows = shape.rows,
                                .channels = shape.channels,
                                .stats = operands.stats.data<float>(),
                                .workspace = scratch,
                                .sums = sums_data,
                                .finalize = finalize};
  ops::on_device(
      op, stream, [&] { cpu::batchnorm_stats(args); },
      [&](auto cuda_stream) { cuda::batchnorm_stats(args, cuda_stream); });
}

void batchnorm_stats_to_sums(const Tensor& stats, Tensor& sums, Stream& stream) {
  constexpr ops::OpName op{"batchnorm_stats_to_sums"};
  const int64_t channels = per_channel_count(op, "stats", stats);
  const Device device = stats.device();
  ops::require_f32(op, "stats", stats, batchnorm_stats_numel(channels), device);
  ops::require_f64(op, "sums", sums, batchnorm_stats_numel(channels), device);
  ops::require_on_stream(op, "stats", stats, stream);
  const BatchNormStatsToSumsArgs args{
      .stats = stats.data<float>(), .channels = channels, .sums = sums.data<double>()};
  ops::on_device(
      op, stream, [&] { cpu::batchnorm_stats_to_sums(args); },
      [&](auto cuda_stream) { cuda::batchnorm_stats_to_sums(args, cuda_stream); });
}

void batchnorm_finalize_sums(BatchNormFinalizeSumsOperands operands, Stream& stream) {
  constexpr ops::OpName op{"batchnorm_finalize_sums"};
  const int64_t channels = per_channel_count(op, "batch_stats", operands.batch_stats);
  const Device device = operands.batch_stats.device();
  ops::require_f32(op, "batch_stats", operands.batch_stats, batchnorm_stats_numel(channels),
                   device);
  ops::require_f64(op, "sums", operands.sums, batchnorm_stats_numel(channels), device);
  ops::require_on_stream(op, "batch_stats", operands.batch_stats, stream);
  const BatchNormFinalizeSumsArgs args =
      ops::finalize_args(op, operands.sums.data<double>(), channels, device,
                         {.batch_stats = operands.batch_stats,
                          .running_mean = operands.running_mean,
                          .running_var = operands.running_var,
                          .constants = operands.constants,
                          .conv_input = operands.conv_input});
  ops::on_device(
      op, stream, [&] { cpu::batchnorm_finalize_sums(args); },
      [&](auto cuda_stream) { cuda::batchnorm_finalize_sums(args, cuda_stream); });
}

void batchnorm_normalize(BatchNormNormalizeOperands operands, Stream& stream,
                         const BatchNormEpilogue& epilogue) {
  constexpr ops::OpName op{"batchnorm_normalize"};
  const Rows shape = require_activation(op, "x", operands.x);
  ops::require_like(op, "x", operands.x, "y", operands.y);
  const Device device = operands.x.device();
  ops::require_f32(op, "batch_stats", operands.batch_stats, batchnorm_stats_numel(shape.channels),
                   device);
  const float* w = ops::optional_f32(op, "weight", operands.weight, shape.channels, device);
  const float* b = ops::optional_f32(op, "bias", operands.bias, shape.channels, device);
  const void* residual = optional_residual(op, epilogue, operands.x);
  ops::require_on_stream(op, "x", operands.x, stream);
  const BatchNormNormalizeArgs args{.dtype = operands.x.dtype(),
                                    .x = operands.x.raw_data(),
                                    .batch_stats = operands.batch_stats.data<float>(),
                                    .weight = w,
                                    .bias = b,
                                    .residual = residual,
                                    .relu = epilogue.relu,
                                    .y = operands.y.raw_data(),
                                    .rows = shape.rows,
                                    .channels = shape.channels};
  ops::on_device(
      op, stream, [&] { cpu::batchnorm_normalize(args); },
      [&](auto cuda_stream) { cuda::batchnorm_normalize(args, cuda_stream); });
}

void batchnorm_eval_forward(BatchNormEvalForwardOperands operands, Stream& stream,
                            const BatchNormEpilogue& epilogue) {
  constexpr ops::OpName op{"batchnorm_eval_forward"};
  const Rows shape = require_activation(op, "x", operands.x);
  ops::require_like(op, "x", operands.x, "y", operands.y);
  const Device device = operands.x.device();
  ops::require_f32(op, "running_mean", operands.running_mean, shape.channels, device);
  ops::require_f32(op, "running_var", operands.running_var, shape.channels, device);
  const float* w = ops::optional_f32(op, "weight", operands.weight, shape.channels, device);
  const float* b = ops::optional_f32(op, "bias", operands.bias, shape.channels, device);
  const void* residual = optional_residual(op, epilogue, operands.x);
  ENGINE_REQUIRE(operands.eps >= 0.f,
                 std::string(op) + ": eps must be >= 0, got " + std::to_string(operands.eps));
  ops::require_on_stream(op, "x", operands.x, stream);
  const BatchNormEvalForwardArgs args{.dtype = operands.x.dtype(),
                                      .x = operands.x.raw_data(),
                                      .running_mean = operands.running_mean.data<float>(),
                                      .running_var = operands.running_var.data<float>(),
                                      .weight = w,
                                      .bias = b,
                                      .eps = operands.eps,
                                      .residual = residual,
                                      .relu = epilogue.relu,
                                      .y = operands.y.raw_data(),
                                      .rows = shape.rows,
                                      .channels = shape.channels};
  ops::on_device(
      op, stream, [&] { cpu::batchnorm_eval_forward(args); },
      [&](auto cuda_stream) { cuda::batchnorm_eval_forward(args, cuda_stream); });
}

void batchnorm_backward_reduce(BatchNormBackwardReduceOperands operands, Stream& stream,
                               const BatchNormBackwardFusion& fusion) {
  constexpr ops::OpName op{"batchnorm_backward_reduce"};
  const Rows shape = require_activation(op, "x", operands.x);
  ops::require_like(op, "x", operands.x, "dy", operands.dy);
  const Device device = operands.x.device();
  ops::require_f32(op, "batch_stats", operands.batch_stats, batchnorm_stats_numel(shape.channels),
                   device);
  ops::require_f32(op, "grad_sums", operands.grad_sums, 2 * shape.channels, device);
  float* scratch =
      ops::require_workspace(op, operands.workspace, batchnorm_workspace_numel(operands.x), device,
                             "batchnorm_workspace_numel");
  const ReluGateArgs relu = relu_gate_args(op, fusion.relu, operands.x, shape.channels);
  Tensor relu_grad = fusion.relu_grad;
  ENGINE_REQUIRE(!relu_grad.defined() || relu.active(), std::string(op) + ": relu_grad needs relu");
  if (relu_grad.defined()) ops::require_like(op, "x", operands.x, "relu_grad", relu_grad);
  Tensor bias_grad = fusion.bias_grad, weight_grad = fusion.weight_grad;
  float* db = ops::optional_f32(op, "bias_grad", bias_grad, shape.channels, device);
  float* dw = ops::optional_f32(op, "weight_grad", weight_grad, shape.channels, device);
  ops::require_on_stream(op, "x", operands.x, stream);
  const BatchNormBackwardReduceArgs args{.dtype = operands.x.dtype(),
                                         .dy = operands.dy.raw_data(),
                                         .x = operands.x.raw_data(),
                                         .batch_stats = operands.batch_stats.data<float>(),
                                         .grad_sums = operands.grad_sums.data<float>(),
                                         .rows = shape.rows,
                                         .channels = shape.channels,
                                         .workspace = scratch,
                                         .relu_output = relu.output,
                                         .relu_scale = relu.scale,
                                         .relu_shift = relu.shift,
                                         .relu_grad = ops::optional_data(relu_grad),
                                         .bias_grad = db,
                                         .weight_grad = dw,
                                         .accumulate = fusion.write == GradWrite::accumulate};
  ops::on_device(
      op, stream, [&] { cpu::batchnorm_backward_reduce(args); },
      [&](auto cuda_stream) { cuda::batchnorm_backward_reduce(args, cuda_stream); });
}

void batchnorm_backward_elementwise(BatchNormBackwardElementwiseOperands operands, Stream& stream,
                                    const BatchNormReluGate& relu) {
  constexpr ops::OpName op{"batchnorm_backward_elementwise"};
  const Rows shape = require_activation(op, "x", operands.x);
  ops::require_like(op, "x", operands.x, "dy", operands.dy);
  ops::require_like(op, "x", operands.x, "dx", operands.dx);
  const Device device = operands.x.device();
  ops::require_f32(op, "batch_stats", operands.batch_stats, batchnorm_stats_numel(shape.channels),
                   device);
  const float* w = ops::optional_f32(op, "weight", operands.weight, shape.channels, device);
  ops::require_f32(op, "grad_sums", operands.grad_sums, 2 * shape.channels, device);
  const ReluGateArgs gate = relu_gate_args(op, relu, operands.x, shape.channels);
  ops::require_on_stream(op, "x", operands.x, stream);
  const BatchNormBackwardElementwiseArgs args{.dtype = operands.x.dtype(),
                                              .dy = operands.dy.raw_data(),
                                              .x = operands.x.raw_data(),
                                              .batch_stats = operands.batch_stats.data<float>(),
                                              .weight = w,
                                              .grad_sums = operands.grad_sums.data<float>(),
                                              .dx = operands.dx.raw_data(),
                                              .rows = shape.rows,
                                              .channels = shape.channels,
                                              .relu_output = gate.output,
                                              .relu_scale = gate.scale,
                                              .relu_shift = gate.shift};
  ops::on_device(
      op, stream, [&] { cpu::batchnorm_backward_elementwise(args); },
      [&](auto cuda_stream) { cuda::batchnorm_backward_elementwise(args, cuda_stream); });
}

}  // namespace engine

namespace engine::ops {

BatchNormFinalizeSumsArgs finalize_args(OpName op, const double* sums, int64_t channels,
                                        Device device, FinalizeTensors tensors) {
  BatchNormConvInput& conv_input = tensors.conv_input;
  if (!tensors.batch_stats.defined()) {
    ENGINE_REQUIRE(!conv_input.scale.defined(),
                   std::string(op) + ": conv_input's coefficients need the finalize (batch_stats)");
    return {};
  }
  const float momentum = tensors.constants.momentum, eps = tensors.constants.eps;
  require_f32(op, "batch_stats", tensors.batch_stats, 2 * channels + 1, device);
  ENGINE_REQUIRE(momentum >= 0.f && momentum <= 1.f,
                 std::string(op) + ": momentum must be in [0, 1], got " + std::to_string(momentum));
  ENGINE_REQUIRE(eps >= 0.f, std::string(op) + ": eps must be >= 0, got " + std::to_string(eps));
  ENGINE_REQUIRE(conv_input.scale.defined() == conv_input.shift.defined(),
                 std::string(op) + ": conv_input needs both scale and shift");
  const bool coefficients = conv_input.scale.defined();
  return {.sums = sums,
          .channels = channels,
          .momentum = momentum,
          .eps = eps,
          .running_mean = optional_f32(op, "running_mean", tensors.running_mean, channels, device),
          .running_var = optional_f32(op, "running_var", tensors.running_var, channels, device),
          .batch_stats = tensors.batch_stats.data<float>(),
          .input_scale = optional_f32(op, "conv_input.scale", conv_input.scale, channels, device),
          .input_shift = optional_f32(op, "conv_input.shift", conv_input.shift, channels, device),
          .weight = coefficients
                        ? optional_f32(op, "conv_input.weight", conv_input.weight, channels, device)
                        : nullptr,
          .bias = coefficients
                      ? optional_f32(op, "conv_input.bias", conv_input.bias, channels, device)
                      : nullptr};
}

}  // namespace engine::ops
