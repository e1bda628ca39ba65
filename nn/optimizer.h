// What the trainer and checkpoints need of an optimizer over a ParameterSet's flat buffers
// (nn::Sgd, nn::AdamW, nn::Lars): a step at the schedule's rate, a reset, and the state a
// checkpoint stores so that a resumed run repeats the same steps bit for bit.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::nn {

// An optimizer's state as a checkpoint holds it: flat buffers in the ParameterSet's flat
// layout keyed by torch's state names ("momentum_buffer", "exp_avg", "exp_avg_sq"), and
// text values (hyper-parameters, the step count) keyed without the "optimizer." prefix.
struct OptimizerState {
  bool started = false;
  std::map<std::string, std::vector<float>> buffers;
  std::map<std::string, std::string> metadata;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // "sgd", "adamw" or "lars": the checkpoint's "optimizer" metadata and --opt's value.
  virtual std::string_view name() const = 0;
  // One step of every parameter at rate lr (the schedule's), gradients times grad_scale.
  virtual void step(float lr, Stream& stream, float grad_scale = 1.f) = 0;
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
};

// The shortest text that reads back as the same float (checkpoint metadata).
std::string float_metadata(float value);
// A saved buffer as a flat f32 tensor of `numel` elements (host), or an error naming the
// optimizer and the buffer.
Tensor state_buffer(const OptimizerState& state, const std::string& name, int64_t numel,
                    std::string_view optimizer);

}  // namespace engine::nn
