#include "nn/lars.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/error.h"
#include "kernels/ops/copy.h"
#include "kernels/ops/optim.h"
#include "nn/parameter_runs.h"

namespace engine::nn {
namespace {

void require_config(const LarsConfig& c) {
  const auto bad = [](const std::string& what) { fail("nn::Lars: " + what); };
  if (!(c.lr >= 0.f) || !std::isfinite(c.lr)) bad("lr must be >= 0, got " + std::to_string(c.lr));
  if (!(c.momentum >= 0.f) || !std::isfinite(c.momentum)) bad("momentum must be >= 0");
  if (!(c.weight_decay >= 0.f) || !std::isfinite(c.weight_decay)) bad("weight_decay must be >= 0");
  if (!(c.eta > 0.f) || !std::isfinite(c.eta)) bad("eta must be > 0, got " + std::to_string(c.eta));
  if (!(c.epsilon >= 0.f) || !std::isfinite(c.epsilon)) bad("epsilon must be >= 0");
}

}  // namespace

Lars::Lars(ParameterSet& parameters, const LarsConfig& config, Stream& stream)
    : Optimizer(parameters),
      parameters_(parameters),
      config_(config),
      staged_(parameters, 1, "Lars") {
  require_config(config_);
  if (!parameters_.allocated()) {
    fail(
        "nn::Lars: the ParameterSet is not allocated (call allocate() before building the "
        "optimizer)");
  }
  if (parameters_.parameters().empty()) fail("nn::Lars: the ParameterSet has no parameters");
  const Device device = parameters_.device();
  momentum_ = Tensor::zeros(parameters_.flat_values().shape(), DType::f32, device, stream);
  segments_ = parameter_segments(
      parameters_, config_.exclude_norm_and_bias ? SegmentAdapt::weights : SegmentAdapt::all,
      stream);
  int64_t largest = 0;
  for (const ParameterInfo& p : parameters_.parameters())
    largest = std::max(largest, p.numel());
  blocks_per_segment_ = sum_squares_blocks(largest);
  const int64_t count = segments_.size(0);
  partials_ = Tensor::zeros(
      {sum_squares_partials(
          {.segments = count, .blocks_per_segment = blocks_per_segment_, .inputs = 2})},
      DType::f64, device, stream);
  sums_ = Tensor::zeros({count, 2}, DType::f64, device, stream);
}

void Lars::stage_step(float lr, Stream& stream, float grad_scale) {
  staged_.stage(lr, grad_scale, {lr}, stream);
  started_ = true;
}

void Lars::launch_step(Stream& stream) {
  staged_.require_launchable();
  Tensor& values = parameters_.flat_values();
  const Tensor& grads = parameters_.flat_grads();
  engine::sum_squares({.a = values,
                       .b = grads,
                       .segments = segments_,
                       .sums = sums_,
                       .partials = partials_,
                       .blocks_per_segment = blocks_per_segment_},
                      stream);
  const LarsOptions options{.lr = staged_.lr(),
                            .momentum = config_.momentum,
                            .weight_decay = config_.weight_decay,
                            .eta = config_.eta,
                            .epsilon = config_.epsilon,
                            .grad_scale = staged_.grad_scale()};
  lars_step(options,
            {.params = values,
             .grads = grads,
             .momentum_buffer = momentum_,
             .segments = segments_,
             .sum_squares = sums_,
             .lr = staged_.device_values()},
            stream);
}

void Lars::reset(Stream& stream) {
  fill(momentum_, 0.f, stream);
  started_ = false;
}

std::vector<std::pair<std::string, const Tensor*>> Lars::state_buffers() const {
  return {{"momentum_buffer", &momentum_}};
}

std::map<std::string, std::string> Lars::state_metadata() const {
  return {{"lr", float_metadata(config_.lr)},
          {"momentum", float_metadata(config_.momentum)},
          {"weight_decay", float_metadata(config_.weight_decay)},
          {"eta", float_metadata(config_.eta)},
          {"epsilon", float_metadata(config_.epsilon)},
          {"exclude_norm_and_bias", config_.exclude_norm_and_bias ? "true" : "false"}};
}

void Lars::load_state(const OptimizerState& state, Stream& stream) {
  reset(stream);
  if (!state.started) return;
  copy(state_buffer(state, "momentum_buffer", momentum_.numel(), "Lars").reshape(momentum_.shape()),
       momentum_, stream);
  stream.synchronize();  // the host copy dies here
  started_ = true;
}

}  // namespace engine::nn
