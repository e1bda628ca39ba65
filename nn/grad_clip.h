// --clip-grad: torch.nn.utils.clip_grad_norm_(parameters, max_norm) over a ParameterSet's
// flat gradients. The trainer clips after the all-reduce (so every rank scales the same
// averaged gradient by the same factor) and once per optimizer step, whatever the optimizer.
// Three launches: the squared global norm in double (two, kernels/ops/optim.h), then the
// scaling, which reads the norm on the device, so clipping never waits for the host.
#pragma once

#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/parameters.h"

namespace engine::nn {

class GradClip {
 public:
  // max_norm must be finite and > 0; parameters allocated, and outliving this.
  GradClip(ParameterSet& parameters, float max_norm, Stream& stream);

  // grads *= min(1, max_norm / (||grads|| + 1e-6)).
  void clip(Stream& stream);
  // The norm the last clip() measured, before scaling (reads the device: for tests and logs).
  double last_norm(Stream& stream) const;
  float max_norm() const { return max_norm_; }

 private:
  ParameterSet& parameters_;
  float max_norm_;
  Tensor segment_;  // one row: the whole flat buffer (its gaps are zeros)
  int blocks_ = 1;
  Tensor partials_, sum_squares_;
};

}  // namespace engine::nn
