#include "nn/sgd.h"

#include <cmath>
#include <string>

#include "kernels/error.h"
#include "kernels/ops/copy.h"
#include "kernels/ops/optim.h"

namespace engine::nn {
namespace {

void require_config(const SgdConfig& c) {
  const auto bad = [](const std::string& what) { fail("nn::Sgd: " + what); };
  if (!(c.lr >= 0.f) || !std::isfinite(c.lr)) bad("lr must be >= 0, got " + std::to_string(c.lr));
  if (!(c.momentum >= 0.f) || !std::isfinite(c.momentum)) {
    bad("momentum must be >= 0, got " + std::to_string(c.momentum));
  }
  if (!std::isfinite(c.dampening)) bad("dampening must be finite");
  if (!(c.weight_decay >= 0.f) || !std::isfinite(c.weight_decay)) {
    bad("weight_decay must be >= 0, got " + std::to_string(c.weight_decay));
  }
  if (c.nesterov && (c.momentum <= 0.f || c.dampening != 0.f)) {
    bad("nesterov momentum requires a momentum > 0 and zero dampening (as torch.optim.SGD), got "
        "momentum " +
        std::to_string(c.momentum) + ", dampening " + std::to_string(c.dampening));
  }
}

}  // namespace

Sgd::Sgd(ParameterSet& parameters, const SgdConfig& config, Stream& stream)
    : Optimizer(parameters),
      parameters_(parameters),
      config_(config),
      staged_(parameters, 1, "Sgd") {
  require_config(config_);
  if (!parameters_.allocated()) {
    fail(
        "nn::Sgd: the ParameterSet is not allocated (call allocate() before building the "
        "optimizer)");
  }
  if (parameters_.parameters().empty()) fail("nn::Sgd: the ParameterSet has no parameters");
  if (config_.momentum != 0.f) {
    momentum_ =
        Tensor::zeros(parameters_.flat_values().shape(), DType::f32, parameters_.device(), stream);
  }
  runs_ = decay_runs(parameters_, config_.weight_decay, config_.decay_norm_and_bias);
}

void Sgd::stage_step(float lr, Stream& stream, float grad_scale) {
  staged_.stage(lr, grad_scale, {lr}, stream);
  first_step_ = !started_;
  started_ = true;
}

void Sgd::launch_step(Stream& stream) {
  staged_.require_launchable();
  SgdOptions options;
  options.lr = staged_.lr();
  options.momentum = config_.momentum;
  options.dampening = config_.dampening;
  options.nesterov = config_.nesterov;
  options.grad_scale = staged_.grad_scale();
  const MomentumBuffer buffer_state = first_step_ ? MomentumBuffer::empty : MomentumBuffer::filled;
  Tensor& values = parameters_.flat_values();
  const Tensor& grads = parameters_.flat_grads();
  const bool writes_copy = compute_copy_ != nullptr && compute_copy_->prepared() &&
                           compute_copy_->dtype() == DType::bf16;
  for (const SgdRun& run : runs_) {
    options.weight_decay = run.weight_decay ? config_.weight_decay : 0.f;
    if (runs_.size() == 1) {
      sgd_step(options,
               {.params = values,
                .grads = grads,
                .momentum_buffer = momentum_,
                .buffer_state = buffer_state,
                .lr = staged_.device_values(),
                .params_bf16 = writes_copy ? compute_copy_->flat() : Tensor()},
               stream);
      continue;
    }
    const Shape shape{run.numel};
    Tensor value_run = values.view(run.offset, shape);
    Tensor momentum_run = momentum_.defined() ? momentum_.view(run.offset, shape) : Tensor();
    sgd_step(
        options,
        {.params = value_run,
         .grads = grads.view(run.offset, shape),
         .momentum_buffer = momentum_run,
         .buffer_state = buffer_state,
         .lr = staged_.device_values(),
         .params_bf16 = writes_copy ? compute_copy_->flat().view(run.offset, shape) : Tensor()},
        stream);
  }
  if (writes_copy) compute_copy_->written_by_optimizer();
}

void Sgd::reset(Stream& stream) {
  if (momentum_.defined()) fill(momentum_, 0.f, stream);
  started_ = false;
}

void Sgd::load_state(const Tensor& momentum_values, bool started, Stream& stream) {
  if (!started || !momentum_.defined()) {
    reset(stream);
    started_ = started;
    return;
  }
  if (!momentum_values.defined() || momentum_values.dtype() != DType::f32 ||
      momentum_values.numel() != momentum_.numel()) {
    fail("nn::Sgd::load_state: the momentum buffer is " +
         (momentum_values.defined() ? momentum_values.describe() : std::string("undefined")) +
         ", expected f32 with " + std::to_string(momentum_.numel()) +
         " elements (the flat parameter layout)");
  }
  copy(momentum_values.reshape(momentum_.shape()), momentum_, stream);
  started_ = true;
}

std::vector<std::pair<std::string, const Tensor*>> Sgd::state_buffers() const {
  if (!momentum_.defined()) return {};
  return {{"momentum_buffer", &momentum_}};
}

std::map<std::string, std::string> Sgd::state_metadata() const {
  const auto flag = [](bool value) { return std::string(value ? "true" : "false"); };
  return {{"lr", float_metadata(config_.lr)},
          {"momentum", float_metadata(config_.momentum)},
          {"dampening", float_metadata(config_.dampening)},
          {"weight_decay", float_metadata(config_.weight_decay)},
          {"nesterov", flag(config_.nesterov)},
          {"decay_norm_and_bias", flag(config_.decay_norm_and_bias)}};
}

void Sgd::load_state(const OptimizerState& state, Stream& stream) {
  const bool has_buffer = momentum_.defined();
  if (!has_buffer || !state.buffers.contains("momentum_buffer")) {
    // Without a saved momentum a step with momentum must start it afresh.
    load_state(Tensor(), state.started && !has_buffer, stream);
    return;
  }
  load_state(state_buffer(state, "momentum_buffer", momentum_.numel(), "Sgd"), state.started,
             stream);
}

}  // namespace engine::nn
