// Arguments of the optimizer kernels (SGD, AdamW, LARS, and the gradient norms), shared by the
// dispatcher (kernels/ops/optim.cpp), the CPU twin (kernels/cpu/optim.h) and the CUDA launcher
// (kernels/cuda/optim.h); see kernels/args/batchnorm.h for why. kernels/ops/optim.h says what the
// step computes.
#pragma once

#include <cmath>
#include <cstdint>

namespace engine {

// torch.optim.SGD's hyperparameters (maximize=False), plus a factor applied to the
// gradients first (1/world size for averaging, or unscaling).
struct SgdOptions {
  float lr = 0.1f;
  float momentum = 0.f;
  float dampening = 0.f;
  float weight_decay = 0.f;
  bool nesterov = false;  // needs momentum > 0 and dampening = 0, as PyTorch
  float grad_scale = 1.f;
};

struct SgdStepArgs {
  float* params = nullptr;
  const float* grads = nullptr;
  float* momentum_buffer = nullptr;  // or null when options.momentum == 0
  int64_t n = 0;
  SgdOptions options;
  bool first_step = false;  // the momentum buffer holds nothing yet
  // The rate in memory on the kernel's device, read when the kernel runs in place of
  // options.lr (a CUDA graph captured once replays each step's rate), or null.
  const float* lr = nullptr;
  // Or n bf16 values, each set to the updated param rounded (the layers' bf16 compute copy,
  // written while the param is in cache instead of by a cast that reads the params again).
  // The CPU kernel's only: the op runs a cast after the CUDA kernel.
  uint16_t* params_bf16 = nullptr;
};

// torch.optim.AdamW's hyperparameters (amsgrad=False, maximize=False), plus a factor applied
// to the gradients first, as SgdOptions.
struct AdamWOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 1e-2f;
  float grad_scale = 1.f;
};

// The per-step scalars of an AdamW step, computed once on the host in double as PyTorch 1.13
// does (its step count, lr and betas are Python floats; each scalar meets the f32 tensors
// rounded to float): decay = 1 - lr * wd, step_size = lr / (1 - beta1^t), and
// bias_correction2_sqrt = sqrt(1 - beta2^t).
struct AdamWScalars {
  float decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
      neg_step_size, grad_scale;
};

inline AdamWScalars adamw_scalars(const AdamWOptions& o, int64_t step) {
  const double lr = o.lr, beta1 = o.beta1, beta2 = o.beta2, t = static_cast<double>(step);
  return {.decay = static_cast<float>(1.0 - lr * static_cast<double>(o.weight_decay)),
          .beta1 = o.beta1,
          .one_minus_beta1 = static_cast<float>(1.0 - beta1),
          .beta2 = o.beta2,
          .one_minus_beta2 = static_cast<float>(1.0 - beta2),
          .bias_correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2, t))),
          .eps = o.eps,
          .neg_step_size = static_cast<float>(-(lr / (1.0 - std::pow(beta1, t)))),
          .grad_scale = o.grad_scale};
}

// The scalars of AdamWScalars that change from step to step, as AdamWStepArgs.step_scalars
// holds them in memory on the kernel's device.
enum AdamWStepScalar {
  kAdamWNegStepSize,
  kAdamWBiasCorrection2Sqrt,
  kAdamWDecay,
  kAdamWStepScalars
};

struct AdamWStepArgs {
  float* params = nullptr;
  const float* grads = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  int64_t n = 0;
  AdamWOptions options;
  int64_t step = 1;  // the step being taken, from 1 (PyTorch's state["step"] after += 1)
  // Or the step's scalars in memory on the kernel's device (AdamWStepScalar order; the decay
  // read only when options.weight_decay != 0, else 1), read when the kernel runs in place of
  // those that options.lr and step give (a CUDA graph captured once replays each step's).
  const float* step_scalars = nullptr;
};

// A table of segments of flat f32 buffers (one per parameter tensor): i32 triples
// {begin, end, flags} on the kernel's device, so that one launch covers every parameter
// without a launch per tensor. i32 offsets: the op checks the buffers hold under 2^31
// elements (ResNet-152 has 60M parameters).
inline constexpr int kSegmentFields = 3;
inline constexpr int32_t kSegmentAdapt = 1;  // flags bit: LARS adapts this tensor's rate

// Sums of squares per segment of one or two buffers (a and b, read in the same pass), in
// double. Pass 1: blocks_per_segment blocks per segment each write a partial sum; pass 2
// adds each segment's partials in a fixed order into sums[segment * inputs + k], so the result
// does not depend on timing (no atomics) and a resumed run repeats it bit for bit. The CPU
// twin fills the same partials (one per share of the segment) and sums.
struct SumSquaresArgs {
  const float* a = nullptr;
  const float* b = nullptr;  // or null: one input
  const int32_t* segments = nullptr;
  int segment_count = 0;
  int blocks_per_segment = 1;
  double* partials = nullptr;  // segment_count * blocks_per_segment * inputs
  double* sums = nullptr;      // segment_count * inputs
};

// torch.nn.utils.clip_grad_norm_ after the sum of squares: every element of grads is
// multiplied by min(1, max_norm / (sqrt(*sum_squares) + 1e-6)), computed in f32 from the
// double sum on the device (no host round trip).
struct ClipGradArgs {
  float* grads = nullptr;
  int64_t n = 0;
  const double* sum_squares = nullptr;  // one element
  float max_norm = 1.f;
};

// LARS as the MLPerf ResNet-50 reference uses it (kernels/ops/optim.h has the formula).
struct LarsOptions {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 5e-5f;
  float eta = 1e-3f;    // trust coefficient
  float epsilon = 0.f;  // added to the trust ratio's denominator (MLPerf: 0)
  float grad_scale = 1.f;
};

struct LarsStepArgs {
  float* params = nullptr;
  const float* grads = nullptr;
  float* momentum_buffer = nullptr;
  const int32_t* segments = nullptr;  // the table above; flags kSegmentAdapt
  int segment_count = 0;
  // sum_squares of (params, grads) per segment: [segment][0] = ||w||^2, [segment][1] = ||g||^2,
  // of the gradient before grad_scale.
  const double* sum_squares = nullptr;
  LarsOptions options;
  // The rate in memory on the kernel's device, read when the kernel runs in place of
  // options.lr (as SgdStepArgs.lr), or null.
  const float* lr = nullptr;
};

}  // namespace engine
