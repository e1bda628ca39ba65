#include "kernels/ops/optim.h"

#include <cmath>
#include <string>

#include "kernels/cpu/optim.h"
#include "kernels/cuda/optim.h"
#include "kernels/ops/checks.h"
#include "kernels/ops/copy.h"
#include "kernels/ops/dispatch.h"

namespace engine {
namespace {

void require_options(ops::OpName op, const SgdOptions& o) {
  const auto bad = [&](const std::string& what) { fail(std::string(op) + ": " + what); };
  if (!(o.lr >= 0.f) || !std::isfinite(o.lr)) bad("lr must be >= 0, got " + std::to_string(o.lr));
  if (!(o.momentum >= 0.f)) bad("momentum must be >= 0, got " + std::to_string(o.momentum));
  if (!(o.weight_decay >= 0.f)) {
    bad("weight_decay must be >= 0, got " + std::to_string(o.weight_decay));
  }
  if (!std::isfinite(o.grad_scale)) bad("grad_scale must be finite");
  if (o.nesterov && (o.momentum <= 0.f || o.dampening != 0.f)) {
    bad("nesterov momentum requires a momentum and zero dampening (as torch.optim.SGD)");
  }
}

}  // namespace

void sgd_step(const SgdOptions& options, SgdStepOperands operands, Stream& stream) {
  constexpr ops::OpName op{"sgd_step"};
  require_options(op, options);
  ops::require_defined(op, "params", operands.params);
  if (operands.params.dtype() != DType::f32) {
    fail(std::string(op) + ": params is " + operands.params.describe() +
         ", expected f32 (master weights)");
  }
  ops::require_like(op, "params", operands.params, "grads", operands.grads);
  float* buffer = nullptr;
  if (options.momentum != 0.f) {
    ops::require_like(op, "params", operands.params, "momentum_buffer", operands.momentum_buffer);
    buffer = operands.momentum_buffer.data<float>();
  }
  ops::require_on_stream(op, "params", operands.params, stream);
  Tensor& copy = operands.params_bf16;
  if (copy.defined() && (copy.dtype() != DType::bf16 || copy.numel() != operands.params.numel() ||
                         copy.device() != operands.params.device())) {
    fail(std::string(op) + ": params_bf16 is " + copy.describe() +
         ", expected bf16 with the size and device of params (" + operands.params.describe() + ")");
  }
  SgdStepArgs args{.params = operands.params.data<float>(),
                   .grads = operands.grads.data<float>(),
                   .momentum_buffer = buffer,
                   .n = operands.params.numel(),
                   .options = options,
                   .first_step = operands.buffer_state == MomentumBuffer::empty,
                   .lr = ops::optional_f32(op, "lr", operands.lr, 1, operands.params.device())};
  ops::on_device(
      op, stream,
      [&] {
        if (copy.defined()) args.params_bf16 = static_cast<uint16_t*>(copy.raw_data());
        cpu::sgd_step(args);
      },
      [&](auto cuda_stream) { cuda::sgd_step(args, cuda_stream); });
  if (copy.defined() && !operands.params.device().is_cpu()) {
    cast(operands.params, copy, stream);
  }
}

namespace {

void require_master(ops::OpName op, std::string_view name, const Tensor& t) {
  ops::require_defined(op, name, t);
  if (t.dtype() != DType::f32) {
    fail(std::string(op) + ": " + std::string(name) + " is " + t.describe() +
         ", expected f32 (master weights)");
  }
}

// The table's shape and dtype. Its rows stay inside the buffers by construction (nn builds
// them from the ParameterSet's layout); checking them here would read a device table back.
int require_segments(ops::OpName op, const Tensor& segments, int64_t n, Device device) {
  ops::require_defined(op, "segments", segments);
  if (segments.dtype() != DType::i32 || segments.dim() != 2 || segments.size(1) != kSegmentFields ||
      segments.device() != device) {
    fail(std::string(op) + ": segments is " + segments.describe() + ", expected i32 [segments, " +
         std::to_string(kSegmentFields) + "] on " + device.str());
  }
  if (n >= (int64_t{1} << 31)) {
    fail(std::string(op) + ": " + std::to_string(n) + " elements do not fit i32 segment offsets");
  }
  return static_cast<int>(segments.size(0));
}

}  // namespace

void adamw_step(const AdamWOptions& options, AdamWStepOperands operands, Stream& stream) {
  constexpr ops::OpName op{"adamw_step"};
  const auto bad = [&](const std::string& what) { fail(std::string(op) + ": " + what); };
  const AdamWOptions& o = options;
  if (!(o.lr >= 0.f) || !std::isfinite(o.lr)) bad("lr must be >= 0, got " + std::to_string(o.lr));
  if (!(o.beta1 >= 0.f && o.beta1 < 1.f) || !(o.beta2 >= 0.f && o.beta2 < 1.f)) {
    bad("betas must be in [0, 1), got " + std::to_string(o.beta1) + ", " + std::to_string(o.beta2));
  }
  if (!(o.eps >= 0.f) || !std::isfinite(o.eps))
    bad("eps must be >= 0, got " + std::to_string(o.eps));
  if (!(o.weight_decay >= 0.f)) bad("weight_decay must be >= 0");
  if (!std::isfinite(o.grad_scale)) bad("grad_scale must be finite");
  if (operands.step < 1) bad("step counts from 1, got " + std::to_string(operands.step));
  require_master(op, "params", operands.params);
  ops::require_like(op, "params", operands.params, "grads", operands.grads);
  ops::require_like(op, "params", operands.params, "exp_avg", operands.exp_avg);
  ops::require_like(op, "params", operands.params, "exp_avg_sq", operands.exp_avg_sq);
  ops::require_on_stream(op, "params", operands.params, stream);
  const AdamWStepArgs args{
      .params = operands.params.data<float>(),
      .grads = operands.grads.data<float>(),
      .exp_avg = operands.exp_avg.data<float>(),
      .exp_avg_sq = operands.exp_avg_sq.data<float>(),
      .n = operands.params.numel(),
      .options = options,
      .step = operands.step,
      .step_scalars = ops::optional_f32(op, "step_scalars", operands.step_scalars,
                                        kAdamWStepScalars, operands.params.device())};
  ops::on_device(
      op, stream, [&] { cpu::adamw_step(args); },
      [&](auto cuda_stream) { cuda::adamw_step(args, cuda_stream); });
}

int64_t sum_squares_partials(const SumSquaresPartition& partition) {
  return partition.segments * partition.blocks_per_segment * partition.inputs;
}

void sum_squares(SumSquaresOperands operands, Stream& stream) {
  constexpr ops::OpName op{"sum_squares"};
  require_master(op, "a", operands.a);
  if (operands.b.defined()) ops::require_like(op, "a", operands.a, "b", operands.b);
  const int count =
      require_segments(op, operands.segments, operands.a.numel(), operands.a.device());
  if (operands.blocks_per_segment < 1 || operands.blocks_per_segment > 65535) {
    fail(std::string(op) + ": blocks_per_segment must be in [1, 65535], got " +
         std::to_string(operands.blocks_per_segment));
  }
  const int inputs = operands.b.defined() ? 2 : 1;
  ops::require_f64(
      op, "partials", operands.partials,
      sum_squares_partials(
          {.segments = count, .blocks_per_segment = operands.blocks_per_segment, .inputs = inputs}),
      operands.a.device());
  ops::require_f64(op, "sums", operands.sums, int64_t{count} * inputs, operands.a.device());
  ops::require_on_stream(op, "a", operands.a, stream);
  const SumSquaresArgs args{.a = operands.a.data<float>(),
                            .b = operands.b.defined() ? operands.b.data<float>() : nullptr,
                            .segments = operands.segments.data<int32_t>(),
                            .segment_count = count,
                            .blocks_per_segment = operands.blocks_per_segment,
                            .partials = operands.partials.data<double>(),
                            .sums = operands.sums.data<double>()};
  ops::on_device(
      op, stream, [&] { cpu::sum_squares(args); },
      [&](auto cuda_stream) { cuda::sum_squares(args, cuda_stream); });
}

void clip_grad(ClipGradOperands operands, Stream& stream) {
  constexpr ops::OpName op{"clip_grad"};
  if (!(operands.max_norm > 0.f) || !std::isfinite(operands.max_norm)) {
    fail(std::string(op) + ": max_norm must be finite and > 0, got " +
         std::to_string(operands.max_norm));
  }
  require_master(op, "grads", operands.grads);
  ops::require_f64(op, "sum_squares", operands.sum_squares, 1, operands.grads.device());
  ops::require_on_stream(op, "grads", operands.grads, stream);
  const ClipGradArgs args{.grads = operands.grads.data<float>(),
                          .n = operands.grads.numel(),
                          .sum_squares = operands.sum_squares.data<double>(),
                          .max_norm = operands.max_norm};
  ops::on_device(
      op, stream, [&] { cpu::clip_grad(args); },
      [&](auto cuda_stream) { cuda::clip_grad(args, cuda_stream); });
}

void lars_step(const LarsOptions& options, LarsStepOperands operands, Stream& stream) {
  constexpr ops::OpName op{"lars_step"};
  const auto bad = [&](const std::string& what) { fail(std::string(op) + ": " + what); };
  const LarsOptions& o = options;
  if (!(o.lr >= 0.f) || !std::isfinite(o.lr)) bad("lr must be >= 0, got " + std::to_string(o.lr));
  if (!(o.momentum >= 0.f)) bad("momentum must be >= 0");
  if (!(o.weight_decay >= 0.f)) bad("weight_decay must be >= 0");
  if (!(o.eta > 0.f) || !std::isfinite(o.eta)) bad("eta must be > 0, got " + std::to_string(o.eta));
  if (!(o.epsilon >= 0.f)) bad("epsilon must be >= 0");
  if (!std::isfinite(o.grad_scale)) bad("grad_scale must be finite");
  require_master(op, "params", operands.params);
  ops::require_like(op, "params", operands.params, "grads", operands.grads);
  ops::require_like(op, "params", operands.params, "momentum_buffer", operands.momentum_buffer);
  const int count =
      require_segments(op, operands.segments, operands.params.numel(), operands.params.device());
  ops::require_f64(op, "sum_squares", operands.sum_squares, int64_t{count} * 2,
                   operands.params.device());
  ops::require_on_stream(op, "params", operands.params, stream);
  const LarsStepArgs args{
      .params = operands.params.data<float>(),
      .grads = operands.grads.data<float>(),
      .momentum_buffer = operands.momentum_buffer.data<float>(),
      .segments = operands.segments.data<int32_t>(),
      .segment_count = count,
      .sum_squares = operands.sum_squares.data<double>(),
      .options = options,
      .lr = ops::optional_f32(op, "lr", operands.lr, 1, operands.params.device())};
  ops::on_device(
      op, stream, [&] { cpu::lars_step(args); },
      [&](auto cuda_stream) { cuda::lars_step(args, cuda_stream); });
}

}  // namespace engine
