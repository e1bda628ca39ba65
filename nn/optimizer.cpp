#include "nn/optimizer.h"

#include <charconv>
#include <cmath>

#include "kernels/error.h"
#include "kernels/ops/copy.h"

namespace engine::nn {

StagedStep::StagedStep(const ParameterSet& parameters, int64_t count, std::string_view optimizer)
    : parameters_(parameters), count_(count), optimizer_(optimizer) {}

void StagedStep::stage(float lr, float grad_scale, std::initializer_list<float> values,
                       Stream& stream) {
  const std::string who = "nn::" + optimizer_ + "::stage_step";
  if (!(lr >= 0.f) || !std::isfinite(lr))
    fail(who + ": lr must be >= 0, got " + std::to_string(lr));
  if (!std::isfinite(grad_scale)) fail(who + ": grad_scale must be finite");
  if (static_cast<int64_t>(values.size()) != count_) {
    fail(who + ": " + std::to_string(values.size()) + " values for " + std::to_string(count_) +
         " slots on the device");
  }
  if (!device_values_.defined()) {
    device_values_ = Tensor::empty({count_}, DType::f32, parameters_.device());
  }
  int64_t slot = 0;
  for (const float value : values) {
    Tensor at = device_values_.view(slot++, {1});
    fill(at, value, stream);
  }
  lr_ = lr;
  grad_scale_ = grad_scale;
  staged_ = true;
}

void require_gradients(const ParameterSet& parameters, std::string_view optimizer) {
  if (!parameters.grads_hold_values()) {
    fail("optimizer " + std::string(optimizer) +
         ": no gradients since zero_grad() (run backward first; a ParameterSet's gradients are "
         "stale, not zero, after zero_grad())");
  }
}

void StagedStep::require_launchable() const {
  if (!staged_) fail("nn::" + optimizer_ + "::launch_step: no stage_step() before it");
  require_gradients(parameters_, optimizer_);
}

std::string float_metadata(float value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  return {text, result.ptr};
}

Tensor state_buffer(const OptimizerState& state, const std::string& name, int64_t numel,
                    std::string_view optimizer) {
  const auto found = state.buffers.find(name);
  if (found == state.buffers.end()) {
    fail("nn::" + std::string(optimizer) + "::load_state: the state has no " + name +
         " buffer (a checkpoint of another optimizer?)");
  }
  if (static_cast<int64_t>(found->second.size()) != numel) {
    fail("nn::" + std::string(optimizer) + "::load_state: the " + name + " buffer has " +
         std::to_string(found->second.size()) + " elements, expected " + std::to_string(numel) +
         " (the flat parameter layout)");
  }
  return Tensor::from_floats({numel}, found->second);
}

}  // namespace engine::nn
