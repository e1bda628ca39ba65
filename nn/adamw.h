// torch.optim.AdamW over a ParameterSet's flat buffers, with its state (exp_avg, exp_avg_sq,
// the step count) in two more buffers of the same layout. As nn::Sgd, one fused adamw_step
// per run of parameters sharing a weight-decay flag: one run, or with decay_norm_and_bias
// false the runs of nn/parameter_runs.h (torch with two param groups).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/args/optim.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/optimizer.h"
#include "nn/parameter_runs.h"
#include "nn/parameters.h"

namespace engine::nn {

// torch.optim.AdamW(params, lr, betas, eps, weight_decay), amsgrad=False; lr is the base rate
// a schedule scales.
struct AdamWConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 1e-2f;
  // false: no weight decay on norm weights, norm biases and biases (is_norm_or_bias).
  bool decay_norm_and_bias = true;
};

class AdamW final : public Optimizer {
 public:
  // parameters must be allocated and outlive this optimizer; both moments start at zero.
  AdamW(ParameterSet& parameters, const AdamWConfig& config, Stream& stream);
  AdamW(const AdamW&) = delete;
  AdamW& operator=(const AdamW&) = delete;

  std::string_view name() const override { return "adamw"; }
  // step(): one torch.optim.AdamW step at rate lr; the bias corrections use the step count,
  // which stage_step() increments first (torch's state["step"] += 1) and writes to the device
  // with the rate: every step is replayable.
  void stage_step(float lr, Stream& stream, float grad_scale = 1.f) override;
  void launch_step(Stream& stream) override;
  bool step_replayable() const override { return true; }
  void reset(Stream& stream) override;
  bool started() const override { return steps_ > 0; }
  // "exp_avg" and "exp_avg_sq"; metadata the hyper-parameters and "step".
  std::vector<std::pair<std::string, const Tensor*>> state_buffers() const override;
  std::map<std::string, std::string> state_metadata() const override;
  void load_state(const OptimizerState& state, Stream& stream) override;

  const AdamWConfig& config() const { return config_; }
  const Tensor& exp_avg() const { return exp_avg_; }
  const Tensor& exp_avg_sq() const { return exp_avg_sq_; }
  int64_t steps() const { return steps_; }
  const std::vector<DecayRun>& runs() const { return runs_; }

 private:
  AdamWOptions options(float lr, float weight_decay, float grad_scale) const;

  ParameterSet& parameters_;
  AdamWConfig config_;
  Tensor exp_avg_, exp_avg_sq_;
  std::vector<DecayRun> runs_;
  int64_t steps_ = 0;
  StagedStep staged_;  // the rate and bias corrections (AdamWStepScalar), on the device
};

}  // namespace engine::nn
