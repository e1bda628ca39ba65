// What the trainer and checkpoints need of an optimizer over a ParameterSet's flat buffers
// (nn::Sgd, nn::AdamW, nn::Lars): a step at the schedule's rate, a reset, and the state a
// checkpoint stores so that a resumed run repeats the same steps bit for bit.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/parameters.h"

namespace engine::nn {

// An optimizer's state as a checkpoint holds it: flat buffers in the ParameterSet's flat
// layout keyed by torch's state names ("momentum_buffer", "exp_avg", "exp_avg_sq"), and
// text values (hyper-parameters, the step count) keyed without the "optimizer." prefix.
struct OptimizerState {
  bool started = false;
  std::map<std::string, std::vector<float>> buffers;
  std::map<std::string, std::string> metadata;
};

// Fails unless backward wrote the gradients since zero_grad(), naming the optimizer.
void require_gradients(const ParameterSet& parameters, std::string_view optimizer);

class Optimizer {
 public:
  // The parameters it steps, whose gradients step() checks before anything changes.
  explicit Optimizer(const ParameterSet& parameters) : stepped_(parameters) {}
  virtual ~Optimizer() = default;

  // "sgd", "adamw" or "lars": the checkpoint's "optimizer" metadata and --opt's value.
  virtual std::string_view name() const = 0;
  // One step of every parameter at rate lr (the schedule's), gradients times grad_scale.
  void step(float lr, Stream& stream, float grad_scale = 1.f) {
    require_gradients(stepped_, name());
    stage_step(lr, stream, grad_scale);
    launch_step(stream);
  }
  // The step in two halves, so that a CUDA graph holds it: stage_step() (outside any capture,
  // before or after backward) writes what changes from step to step (the rate; AdamW's bias
  // corrections) into the optimizer's memory on the device, with kernels launched on `stream`,
  // and advances the host state (started(), AdamW's step count). launch_step() checks the
  // gradients and launches the step's kernels, which read those values when they run, so a
  // graph that captured one launch_step() replays the later steps, each at its own rate, with
  // stage_step() before each replay. What else the launches take is fixed by the configuration
  // and grad_scale.
  virtual void stage_step(float lr, Stream& stream, float grad_scale = 1.f) = 0;
  virtual void launch_step(Stream& stream) = 0;
  // Whether the staged step launches what every later step launches, so that a capture of
  // its launch_step() may replay them: not SGD's first (it starts the momentum from the
  // gradient).
  virtual bool step_replayable() const = 0;
  // Forgets the state (torch: optimizer.state cleared).
  virtual void reset(Stream& stream) = 0;
  // True once a step has run since construction, reset() or a load of an unstarted state.
  virtual bool started() const = 0;

  // The state buffers to save (defined ones only), by torch's state name.
  virtual std::vector<std::pair<std::string, const Tensor*>> state_buffers() const = 0;
  // Hyper-parameters and counters to save, keyed without "optimizer.".
  virtual std::map<std::string, std::string> state_metadata() const = 0;
  // Resumes from a saved state; buffers of the wrong size are an engine::Error.
  virtual void load_state(const OptimizerState& state, Stream& stream) = 0;

 private:
  const ParameterSet& stepped_;
};

// What an optimizer's stage_step() leaves for its launch_step(): the rate and gradient scale
// on the host (the kernels' by-value arguments, which their ops check) and the values the
// kernels read on the device, f32 [count] on the parameters' device, each written by a fill.
class StagedStep {
 public:
  StagedStep(const ParameterSet& parameters, int64_t count, std::string_view optimizer);
  // Checks that lr is a rate, keeps lr and grad_scale, and writes device_values[i] = values[i]
  // on stream (allocated by the first call). Before backward, whose gradients a graph's
  // replay computes after it.
  void stage(float lr, float grad_scale, std::initializer_list<float> values, Stream& stream);
  // launch_step()'s checks: stage() ran, and backward wrote the gradients since zero_grad().
  void require_launchable() const;
  float lr() const { return lr_; }
  float grad_scale() const { return grad_scale_; }
  const Tensor& device_values() const { return device_values_; }

 private:
  const ParameterSet& parameters_;
  int64_t count_;
  std::string optimizer_;  // "Sgd", "AdamW", "Lars": the errors' nn::<optimizer>
  Tensor device_values_;
  float lr_ = 0.f, grad_scale_ = 1.f;
  bool staged_ = false;
};

// The shortest text that reads back as the same float (checkpoint metadata).
std::string float_metadata(float value);
// A saved buffer as a flat f32 tensor of `numel` elements (host), or an error naming the
// optimizer and the buffer.
Tensor state_buffer(const OptimizerState& state, const std::string& name, int64_t numel,
                    std::string_view optimizer);

}  // namespace engine::nn
