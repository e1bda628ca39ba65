#include "kernels/ops/optim.h"

#include <cmath>
#include <string>

#include "kernels/cpu/optim.h"
#include "kernels/cuda/optim.h"
#include "kernels/ops/checks.h"
#include "kernels/ops/dispatch.h"

namespace engine {
namespace {

void require_options(std::string_view op, const SgdOptions& o) {
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

void sgd_step(const SgdOptions& options, Tensor& params, const Tensor& grads,
              Tensor& momentum_buffer, MomentumBuffer buffer_state, Stream& stream) {
  constexpr std::string_view op = "sgd_step";
  require_options(op, options);
  ops::require_defined(op, "params", params);
  if (params.dtype() != DType::f32) {
    fail(std::string(op) + ": params is " + params.describe() + ", expected f32 (master weights)");
  }
  ops::require_like(op, "params", params, "grads", grads);
  float* buffer = nullptr;
  if (options.momentum != 0.f) {
    ops::require_like(op, "params", params, "momentum_buffer", momentum_buffer);
    buffer = momentum_buffer.data<float>();
  }
  ops::require_on_stream(op, "params", params, stream);
  const SgdStepArgs args{.params = params.data<float>(),
                         .grads = grads.data<float>(),
                         .momentum_buffer = buffer,
                         .n = params.numel(),
                         .options = options,
                         .first_step = buffer_state == MomentumBuffer::empty};
  ops::on_device(
      op, stream, [&] { cpu::sgd_step(args); },
      [&](auto cuda_stream) { cuda::sgd_step(args, cuda_stream); });
}

namespace {

void require_master(std::string_view op, std::string_view name, const Tensor& t) {
  ops::require_defined(op, name, t);
  if (t.dtype() != DType::f32) {
    fail(std::string(op) + ": " + std::string(name) + " is " + t.describe() +
         ", expected f32 (master weights)");
  }
}

// The table's shape and dtype. Its rows stay inside the buffers by construction (nn builds
// them from the ParameterSet's layout); checking them here would read a device table back.
int require_segments(std::string_view op, const Tensor& segments, int64_t n, Device device) {
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

void adamw_step(const AdamWOptions& options, int64_t step, Tensor& params, const Tensor& grads,
                Tensor& exp_avg, Tensor& exp_avg_sq, Stream& stream) {
  constexpr std::string_view op = "adamw_step";
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
  if (step < 1) bad("step counts from 1, got " + std::to_string(step));
  require_master(op, "params", params);
  ops::require_like(op, "params", params, "grads", grads);
  ops::require_like(op, "params", params, "exp_avg", exp_avg);
  ops::require_like(op, "params", params, "exp_avg_sq", exp_avg_sq);
  ops::require_on_stream(op, "params", params, stream);
  const AdamWStepArgs args{.params = params.data<float>(),
                           .grads = grads.data<float>(),
                           .exp_avg = exp_avg.data<float>(),
                           .exp_avg_sq = exp_avg_sq.data<float>(),
                           .n = params.numel(),
                           .options = options,
                           .step = step};
  ops::on_device(
      op, stream, [&] { cpu::adamw_step(args); },
      [&](auto cuda_stream) { cuda::adamw_step(args, cuda_stream); });
}

int64_t sum_squares_partials(int64_t segments, int blocks_per_segment, int inputs) {
  return segments * blocks_per_segment * inputs;
}

void sum_squares(const Tensor& a, const Tensor& b, const Tensor& segments, int blocks_per_segment,
                 Tensor& partials, Tensor& sums, Stream& stream) {
  constexpr std::string_view op = "sum_squares";
  require_master(op, "a", a);
  if (b.defined()) ops::require_like(op, "a", a, "b", b);
  const int count = require_segments(op, segments, a.numel(), a.device());
  if (blocks_per_segment < 1 || blocks_per_segment > 65535) {
    fail(std::string(op) + ": blocks_per_segment must be in [1, 65535], got " +
         std::to_string(blocks_per_segment));
  }
  const int inputs = b.defined() ? 2 : 1;
  ops::require_f64(op, "partials", partials,
                   sum_squares_partials(count, blocks_per_segment, inputs), a.device());
  ops::require_f64(op, "sums", sums, int64_t{count} * inputs, a.device());
  ops::require_on_stream(op, "a", a, stream);
  const SumSquaresArgs args{.a = a.data<float>(),
                            .b = b.defined() ? b.data<float>() : nullptr,
                            .segments = segments.data<int32_t>(),
                            .segment_count = count,
                            .blocks_per_segment = blocks_per_segment,
                            .partials = partials.data<double>(),
                            .sums = sums.data<double>()};
  ops::on_device(
      op, stream, [&] { cpu::sum_squares(args); },
      [&](auto cuda_stream) { cuda::sum_squares(args, cuda_stream); });
}

void clip_grad(Tensor& grads, const Tensor& sum_squares, float max_norm, Stream& stream) {
  constexpr std::string_view op = "clip_grad";
  if (!(max_norm > 0.f) || !std::isfinite(max_norm)) {
    fail(std::string(op) + ": max_norm must be finite and > 0, got " + std::to_string(max_norm));
  }
  require_master(op, "grads", grads);
  ops::require_f64(op, "sum_squares", sum_squares, 1, grads.device());
  ops::require_on_stream(op, "grads", grads, stream);
  const ClipGradArgs args{.grads = grads.data<float>(),
                          .n = grads.numel(),
                          .sum_squares = sum_squares.data<double>(),
                          .max_norm = max_norm};
  ops::on_device(
      op, stream, [&] { cpu::clip_grad(args); },
      [&](auto cuda_stream) { cuda::clip_grad(args, cuda_stream); });
}

void lars_step(const LarsOptions& options, Tensor& params, const Tensor& grads,
               Tensor& momentum_buffer, const Tensor& segments, const Tensor& sum_squares,
               Stream& stream) {
  constexpr std::string_view op = "lars_step";
  const auto bad = [&](const std::string& what) { fail(std::string(op) + ": " + what); };
  const LarsOptions& o = options;
  if (!(o.lr >= 0.f) || !std::isfinite(o.lr)) bad("lr must be >= 0, got " + std::to_string(o.lr));
  if (!(o.momentum >= 0.f)) bad("momentum must be >= 0");
  if (!(o.weight_decay >= 0.f)) bad("weight_decay must be >= 0");
  if (!(o.eta > 0.f) || !std::isfinite(o.eta)) bad("eta must be > 0, got " + std::to_string(o.eta));
  if (!(o.epsilon >= 0.f)) bad("epsilon must be >= 0");
  if (!std::isfinite(o.grad_scale)) bad("grad_scale must be finite");
  require_master(op, "params", params);
  ops::require_like(op, "params", params, "grads", grads);
  ops::require_like(op, "params", params, "momentum_buffer", momentum_buffer);
  const int count = require_segments(op, segments, params.numel(), params.device());
  ops::require_f64(op, "sum_squares", sum_squares, int64_t{count} * 2, params.device());
  ops::require_on_stream(op, "params", params, stream);
  const LarsStepArgs args{.params = params.data<float>(),
                          .grads = grads.data<float>(),
                          .momentum_buffer = momentum_buffer.data<float>(),
                          .segments = segments.data<int32_t>(),
                          .segment_count = count,
                          .sum_squares = sum_squares.data<double>(),
                          .options = options};
  ops::on_device(
      op, stream, [&] { cpu::lars_step(args); },
      [&](auto cuda_stream) { cuda::lars_step(args, cuda_stream); });
}

}  // namespace engine
