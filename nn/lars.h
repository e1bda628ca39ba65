// LARS as the MLPerf Training ResNet-50 reference uses it (the formula, with its sources, is
// at lars_step in kernels/ops/optim.h): momentum SGD whose rate each conv and linear weight
// tensor scales by a trust ratio eta ||w|| / (||g|| + wd ||w||); BatchNorm weights and
// biases and biases take the plain rate and no weight decay. Per step three launches cover
// every tensor: the sums of squares of weights and gradients per tensor (two), then the
// update, which reads each tensor's sums on the device.
#pragma once

#include <cstdint>

#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/optimizer.h"
#include "nn/parameters.h"

namespace engine::nn {

struct LarsConfig {
  float lr = 0.1f;  // the base rate a schedule scales
  float momentum = 0.9f;
  float weight_decay = 5e-5f;  // MLPerf ResNet-50's submissions use 5e-5 with LARS
  float eta = 1e-3f;           // trust coefficient
  float epsilon = 0.f;         // in the trust ratio's denominator (MLPerf: 0)
  // false: every tensor takes the trust ratio and weight decay (no exclusion).
  bool exclude_norm_and_bias = true;
};

class Lars final : public Optimizer {
 public:
  // parameters must be allocated and outlive this optimizer; the momentum starts at zero.
  Lars(ParameterSet& parameters, const LarsConfig& config, Stream& stream);
  Lars(const Lars&) = delete;
  Lars& operator=(const Lars&) = delete;

  std::string_view name() const override { return "lars"; }
  // step() in two halves (nn::Optimizer): the momentum starts at zero, so every step is
  // replayable.
  void stage_step(float lr, Stream& stream, float grad_scale = 1.f) override;
  void launch_step(Stream& stream) override;
  bool step_replayable() const override { return true; }
  void reset(Stream& stream) override;
  bool started() const override { return started_; }
  // "momentum_buffer"; metadata the hyper-parameters.
  std::vector<std::pair<std::string, const Tensor*>> state_buffers() const override;
  std::map<std::string, std::string> state_metadata() const override;
  void load_state(const OptimizerState& state, Stream& stream) override;

  const LarsConfig& config() const { return config_; }
  const Tensor& momentum_buffer() const { return momentum_; }
  // The last step's sums of squares, f64 [parameters in offset order, 2]: ||w||^2, ||g||^2.
  const Tensor& sum_squares() const { return sums_; }

 private:
  ParameterSet& parameters_;
  LarsConfig config_;
  Tensor momentum_;
  Tensor segments_;  // one row per parameter (nn/parameter_runs.h)
  int blocks_per_segment_ = 1;
  Tensor partials_, sums_;
  bool started_ = false;
  StagedStep staged_;  // the rate, on the device for the kernel
};

}  // namespace engine::nn
