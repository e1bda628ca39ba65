#include "nn/sgd.h"

#include <algorithm>
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

// Each parameter's range reaches up to the next parameter's offset (its alignment gap
// included); neighbours with the same decay flag merge. Without weight decay the flag
// changes nothing, so the whole buffer is one run.
std::vector<SgdRun> plan_runs(const ParameterSet& parameters, const SgdConfig& config) {
  const int64_t total = parameters.flat_values().numel();
  if (config.weight_decay == 0.f || config.decay_norm_and_bias) return {{0, total, true}};
  std::vector<const ParameterInfo*> by_offset;
  for (const ParameterInfo& p : parameters.parameters())
    by_offset.push_back(&p);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const ParameterInfo* a, const ParameterInfo* b) { return a->offset < b->offset; });
  std::vector<SgdRun> runs;
  for (size_t i = 0; i < by_offset.size(); ++i) {
    const int64_t begin = i == 0 ? 0 : by_offset[i]->offset;
    const int64_t end = i + 1 < by_offset.size() ? by_offset[i + 1]->offset : total;
    const bool decay = !is_norm_or_bias(by_offset[i]->kind);
    if (!runs.empty() && runs.back().weight_decay == decay) {
      runs.back().numel = end - runs.back().offset;
    } else {
      runs.push_back({begin, end - begin, decay});
    }
  }
  return runs;
}

}  // namespace

Sgd::Sgd(ParameterSet& parameters, const SgdConfig& config, Stream& stream)
    : parameters_(parameters), config_(config) {
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
  runs_ = plan_runs(parameters_, config_);
}

void Sgd::step(float lr, Stream& stream, float grad_scale) {
  if (!parameters_.grads_hold_values()) {
    fail(
        "nn::Sgd::step: no gradients since zero_grad() (run backward first; a ParameterSet's "
        "gradients are stale, not zero, after zero_grad())");
  }
  SgdOptions options;
  options.lr = lr;
  options.momentum = config_.momentum;
  options.dampening = config_.dampening;
  options.nesterov = config_.nesterov;
  options.grad_scale = grad_scale;
  Tensor& values = parameters_.flat_values();
  const Tensor& grads = parameters_.flat_grads();
  for (const SgdRun& run : runs_) {
    options.weight_decay = run.weight_decay ? config_.weight_decay : 0.f;
    if (runs_.size() == 1) {
      sgd_step(options, values, grads, momentum_,
               started_ ? MomentumBuffer::filled : MomentumBuffer::empty, stream);
      continue;
    }
    const Shape shape{run.numel};
    Tensor value_run = values.view(run.offset, shape);
    Tensor momentum_run = momentum_.defined() ? momentum_.view(run.offset, shape) : Tensor();
    sgd_step(options, value_run, grads.view(run.offset, shape), momentum_run,
             started_ ? MomentumBuffer::filled : MomentumBuffer::empty, stream);
  }
  started_ = true;
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

}  // namespace engine::nn
