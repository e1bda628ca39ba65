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

}  // namespace engine
