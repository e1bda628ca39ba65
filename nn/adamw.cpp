#include "nn/adamw.h"

#include <charconv>
#include <cmath>
#include <string>

#include "kernels/error.h"
#include "kernels/ops/copy.h"
#include "kernels/ops/optim.h"

namespace engine::nn {
namespace {

void require_config(const AdamWConfig& c) {
  const auto bad = [](const std::string& what) { fail("nn::AdamW: " + what); };
  if (!(c.lr >= 0.f) || !std::isfinite(c.lr)) bad("lr must be >= 0, got " + std::to_string(c.lr));
  if (!(c.beta1 >= 0.f && c.beta1 < 1.f) || !(c.beta2 >= 0.f && c.beta2 < 1.f)) {
    bad("betas must be in [0, 1), got " + std::to_string(c.beta1) + ", " + std::to_string(c.beta2));
  }
  if (!(c.eps >= 0.f) || !std::isfinite(c.eps))
    bad("eps must be >= 0, got " + std::to_string(c.eps));
  if (!(c.weight_decay >= 0.f) || !std::isfinite(c.weight_decay)) {
    bad("weight_decay must be >= 0, got " + std::to_string(c.weight_decay));
  }
}

}  // namespace

AdamW::AdamW(ParameterSet& parameters, const AdamWConfig& config, Stream& stream)
    : Optimizer(parameters),
      parameters_(parameters),
      config_(config),
      staged_(parameters, kAdamWStepScalars, "AdamW") {
  require_config(config_);
  if (!parameters_.allocated()) {
    fail(
        "nn::AdamW: the ParameterSet is not allocated (call allocate() before building the "
        "optimizer)");
  }
  if (parameters_.parameters().empty()) fail("nn::AdamW: the ParameterSet has no parameters");
  const Shape& shape = parameters_.flat_values().shape();
  exp_avg_ = Tensor::zeros(shape, DType::f32, parameters_.device(), stream);
  exp_avg_sq_ = Tensor::zeros(shape, DType::f32, parameters_.device(), stream);
  runs_ = decay_runs(parameters_, config_.weight_decay, config_.decay_norm_and_bias);
}

void AdamW::stage_step(float lr, Stream& stream, float grad_scale) {
  const AdamWScalars s = adamw_scalars(options(lr, config_.weight_decay, grad_scale), steps_ + 1);
  staged_.stage(lr, grad_scale, {s.neg_step_size, s.bias_correction2_sqrt, s.decay}, stream);
  ++steps_;
}

AdamWOptions AdamW::options(float lr, float weight_decay, float grad_scale) const {
  return {.lr = lr,
          .beta1 = config_.beta1,
          .beta2 = config_.beta2,
          .eps = config_.eps,
          .weight_decay = weight_decay,
          .grad_scale = grad_scale};
}

void AdamW::launch_step(Stream& stream) {
  staged_.require_launchable();
  Tensor& values = parameters_.flat_values();
  const Tensor& grads = parameters_.flat_grads();
  for (const DecayRun& run : runs_) {
    const AdamWOptions o =
        options(staged_.lr(), run.weight_decay ? config_.weight_decay : 0.f, staged_.grad_scale());
    if (runs_.size() == 1) {
      adamw_step(o,
                 {.params = values,
                  .grads = grads,
                  .exp_avg = exp_avg_,
                  .exp_avg_sq = exp_avg_sq_,
                  .step = steps_,
                  .step_scalars = staged_.device_values()},
                 stream);
      continue;
    }
    const Shape shape{run.numel};
    Tensor value_run = values.view(run.offset, shape);
    Tensor m_run = exp_avg_.view(run.offset, shape);
    Tensor v_run = exp_avg_sq_.view(run.offset, shape);
    adamw_step(o,
               {.params = value_run,
                .grads = grads.view(run.offset, shape),
                .exp_avg = m_run,
                .exp_avg_sq = v_run,
                .step = steps_,
                .step_scalars = staged_.device_values()},
               stream);
  }
}

void AdamW::reset(Stream& stream) {
  fill(exp_avg_, 0.f, stream);
  fill(exp_avg_sq_, 0.f, stream);
  steps_ = 0;
}

std::vector<std::pair<std::string, const Tensor*>> AdamW::state_buffers() const {
  return {{"exp_avg", &exp_avg_}, {"exp_avg_sq", &exp_avg_sq_}};
}

std::map<std::string, std::string> AdamW::state_metadata() const {
  return {{"lr", float_metadata(config_.lr)},
          {"beta1", float_metadata(config_.beta1)},
          {"beta2", float_metadata(config_.beta2)},
          {"eps", float_metadata(config_.eps)},
          {"weight_decay", float_metadata(config_.weight_decay)},
          {"decay_norm_and_bias", config_.decay_norm_and_bias ? "true" : "false"},
          {"steps", std::to_string(steps_)}};
}

void AdamW::load_state(const OptimizerState& state, Stream& stream) {
  reset(stream);
  if (!state.started) return;
  const auto steps = state.metadata.find("steps");
  if (steps == state.metadata.end()) {
    fail(
        "nn::AdamW::load_state: the state has no step count (a checkpoint of another "
        "optimizer?)");
  }
  int64_t count = 0;
  const std::string& text = steps->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error != std::errc() || end != text.data() + text.size() || count < 1) {
    fail("nn::AdamW::load_state: the step count is '" + text + "', expected an integer >= 1");
  }
  const int64_t numel = exp_avg_.numel();
  copy(state_buffer(state, "exp_avg", numel, "AdamW").reshape(exp_avg_.shape()), exp_avg_, stream);
  copy(state_buffer(state, "exp_avg_sq", numel, "AdamW").reshape(exp_avg_sq_.shape()), exp_avg_sq_,
       stream);
  stream.synchronize();  // the host copies die here
  steps_ = count;
}

}  // namespace engine::nn
