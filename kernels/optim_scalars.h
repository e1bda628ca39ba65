// The per-step scalars that the CPU twin and the CUDA kernels of the gradient clipping and
// LARS steps (kernels/ops/optim.h) both derive from the double sums of squares, and those the
// optimizer kernels read from memory on their device, written once so that both backends
// round and pick them the same way.
#pragma once

#include <math.h>
#include <stdint.h>

#include "kernels/args/optim.h"
#include "kernels/host_device.h"

namespace engine {

// torch.nn.utils.clip_grad_norm_ (1.13): total_norm is f32, clip_coef = max_norm /
// (total_norm + 1e-6) in f32, clamped to at most 1. A NaN norm gives a NaN coefficient, as
// torch.clamp(nan, max=1) does, so the gradients carry the NaN on instead of hiding it.
ENGINE_HOST_DEVICE inline float clip_coefficient(double sum_squares, float max_norm) {
  const float total_norm = static_cast<float>(sqrt(sum_squares));
  const float coefficient = max_norm / (total_norm + 1e-6f);
  return coefficient > 1.f ? 1.f : coefficient;
}

// One parameter tensor's LARS rate and weight decay: with kSegmentAdapt,
//   trust = eta ||w|| / (||g|| + wd ||w|| + epsilon) when ||w|| > 0 and ||g|| > 0, else 1
//   scaled_lr = lr * trust, weight decay wd
// else (BatchNorm weights and biases, biases) scaled_lr = lr and no weight decay. The norms
// and the ratio are taken in double from the double sums and rounded once to f32.
struct LarsScalars {
  float scaled_lr;
  float weight_decay;
};
ENGINE_HOST_DEVICE inline LarsScalars lars_scalars(const LarsOptions& o, int32_t flags,
                                                   const double* sum_squares) {
  if ((flags & kSegmentAdapt) == 0) return {o.lr, 0.f};
  const double w_norm = sqrt(sum_squares[0]);
  const double g_norm = sqrt(sum_squares[1]) * fabs(static_cast<double>(o.grad_scale));
  double trust = 1.0;
  if (w_norm > 0.0 && g_norm > 0.0) {
    trust =
        static_cast<double>(o.eta) * w_norm /
        (g_norm + static_cast<double>(o.weight_decay) * w_norm + static_cast<double>(o.epsilon));
  }
  return {static_cast<float>(static_cast<double>(o.lr) * trust), o.weight_decay};
}

// The rate of an SGD or LARS step: the one in memory when there is one (SgdStepArgs.lr).
ENGINE_HOST_DEVICE inline float step_rate(float by_value, const float* in_memory) {
  return in_memory != nullptr ? *in_memory : by_value;
}

// An AdamW step's scalars: those its options and step count give (adamw_scalars), with the
// ones in memory (AdamWStepArgs.step_scalars) in their place when there are some.
ENGINE_HOST_DEVICE inline AdamWScalars adamw_step_scalars(AdamWScalars s, const float* in_memory,
                                                          float weight_decay) {
  if (in_memory == nullptr) return s;
  s.neg_step_size = in_memory[kAdamWNegStepSize];
  s.bias_correction2_sqrt = in_memory[kAdamWBiasCorrection2Sqrt];
  if (weight_decay != 0.f) s.decay = in_memory[kAdamWDecay];
  return s;
}

}  // namespace engine
