// torch.optim.SGD over a ParameterSet's flat buffers, with its state (the momentum buffer)
// in one more buffer of the same layout.
//
// With weight decay on every parameter (torch with one param group) a step is one fused
// sgd_step over the whole flat buffer. The common recipe "no weight decay on BatchNorm and
// bias" (torch with two param groups) splits the layout into the contiguous runs that share
// a decay flag and calls sgd_step once per run on views. ResNets alternate conv and
// BatchNorm, so there are about two runs per conv layer (36 for ResNet-18, 100 for ResNet-50),
// launches of a few microseconds each. A per-element decay mask in the fused kernel would
// instead add a read per element to every step of a kernel bound by memory traffic (3 reads
// and 2 writes of f32 per element: an f32 mask is a fifth more traffic, a byte mask 5%).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/compute_weight.h"
#include "nn/optimizer.h"
#include "nn/parameter_runs.h"
#include "nn/parameters.h"

namespace engine::nn {

// torch.optim.SGD(params, lr, momentum, dampening, weight_decay, nesterov); lr is the base
// rate a schedule scales (step() takes the rate of each step).
struct SgdConfig {
  float lr = 0.1f;
  float momentum = 0.f;
  float dampening = 0.f;
  float weight_decay = 0.f;
  bool nesterov = false;  // needs momentum > 0 and dampening 0, as torch
  // false: weight decay only on conv filters and linear weights (not on norm weights, norm
  // biases and biases: is_norm_or_bias), i.e. torch with two param groups whose second has
  // weight_decay=0.
  bool decay_norm_and_bias = true;
};

// A contiguous range of the flat buffers updated by one sgd_step call (nn/parameter_runs.h).
using SgdRun = DecayRun;

class Sgd final : public Optimizer {
 public:
  // parameters must be allocated and outlive this optimizer. The momentum buffer is
  // allocated (zero, on parameters.device()) when config.momentum != 0; with momentum 0
  // torch keeps no buffer and neither does this.
  Sgd(ParameterSet& parameters, const SgdConfig& config, Stream& stream);
  Sgd(const Sgd&) = delete;
  Sgd& operator=(const Sgd&) = delete;

  // step(): one torch.optim.SGD step of every parameter at rate lr, with gradients multiplied by
  // grad_scale first (1 / world size to average summed gradients, or a loss-scale inverse).
  // The first step after construction or reset() starts the momentum buffer from the
  // gradient, as torch does when its buffer is None. Throws when zero_grad() was called and
  // no backward has written the gradients since (they would be stale values, not zeros).
  // stage_step() and launch_step() split it (nn::Optimizer); a first step is not replayable.
  void stage_step(float lr, Stream& stream, float grad_scale = 1.f) override;
  void launch_step(Stream& stream) override;
  bool step_replayable() const override { return !first_step_; }

  // Forgets the momentum (torch: optimizer.state cleared); the buffer is zeroed.
  void reset(Stream& stream) override;

  // Checkpoint resume: the momentum buffer (flat, f32, as many elements as flat_values(), on
  // any device) and started(). With started false, or momentum 0, the values are ignored
  // and may be undefined.
  void load_state(const Tensor& momentum_values, bool started, Stream& stream);

  // Optimizer: "sgd", the buffer "momentum_buffer" (when momentum != 0), the hyper-parameters.
  // A state without a momentum buffer starts the momentum afresh at the next step.
  std::string_view name() const override { return "sgd"; }
  std::vector<std::pair<std::string, const Tensor*>> state_buffers() const override;
  std::map<std::string, std::string> state_metadata() const override;
  void load_state(const OptimizerState& state, Stream& stream) override;

  const SgdConfig& config() const { return config_; }
  // Undefined when config().momentum == 0.
  const Tensor& momentum_buffer() const { return momentum_; }
  // True once a step has run since construction, reset() or load_state(..., false, ...).
  bool started() const override { return started_; }
  // The sgd_step calls of one step(), sorted by offset, covering the flat buffer.
  const std::vector<SgdRun>& runs() const { return runs_; }
  int run_count() const { return static_cast<int>(runs_.size()); }

  // Each step also writes `copy` (the model's bf16 compute weights of these parameters) with
  // the values it updates, and marks it so, so that the next forward casts nothing; on the CPU
  // in the same pass over the params, while they are in cache (kernels/ops/optim.h). Used while
  // `copy` is prepared in bf16; null: none. Writers of the values other than this optimizer
  // take them through ParameterSet::flat_values(), which makes the copy stale again.
  void write_compute_copy(ComputeWeightCopy* copy) { compute_copy_ = copy; }

 private:
  ParameterSet& parameters_;
  SgdConfig config_;
  Tensor momentum_;
  std::vector<SgdRun> runs_;
  bool started_ = false;
  StagedStep staged_;        // the rate, on the device for the kernels
  bool first_step_ = false;  // the staged step starts the momentum
  ComputeWeightCopy* compute_copy_ = nullptr;
};

}  // namespace engine::nn
