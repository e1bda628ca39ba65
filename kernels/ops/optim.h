// The optimizer ops over flat fp32 buffers (implemented in kernels/ops/optim.cpp): the fused
// SGD and AdamW steps, sums of squares per parameter tensor, gradient clipping by the global
// norm, and the LARS step.
#pragma once

#include "kernels/args/optim.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// SgdOptions (torch.optim.SGD's hyperparameters and a gradient scale): kernels/args/optim.h.

// One step for every element of params (f32, any shape), exactly as torch.optim.SGD:
//   g = grad * grad_scale + weight_decay * param
//   buf = first_step ? g : momentum * buf + (1 - dampening) * g     (when momentum != 0)
//   g = nesterov ? g + momentum * buf : buf                          (when momentum != 0)
//   param -= lr * g
// first_step: the momentum buffer holds nothing yet (MomentumBuffer::empty, PyTorch's "buf is
// None": buf = g, no dampening).
enum class MomentumBuffer { empty, filled };
struct SgdStepOperands {
  Tensor params;  // updated
  Tensor grads;
  Tensor momentum_buffer = {};  // f32 like params, or undefined when momentum == 0
  MomentumBuffer buffer_state = MomentumBuffer::filled;
  // Or f32 [1] on params' device: the rate, read when the kernel runs in place of options.lr
  // (which must still be valid), so that a CUDA graph captured once replays each step's rate.
  Tensor lr = {};
  // Or bf16 with params' size and device: set to the updated params rounded, as cast(params,
  // params_bf16) would (the bf16 compute copy of mixed precision). On the CPU it is written in
  // the same pass, while each block of params is in cache; on CUDA by a cast after the step.
  Tensor params_bf16 = {};
};
void sgd_step(const SgdOptions& options, SgdStepOperands operands, Stream& stream);

// One step for every element, exactly as torch.optim.AdamW (1.13, amsgrad=False), t = step:
//   g = grad * grad_scale
//   param *= 1 - lr * weight_decay                        (decoupled weight decay)
//   exp_avg = beta1 * exp_avg + (1 - beta1) * g
//   exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g
//   param -= lr / (1 - beta1^t) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^t) + eps)
struct AdamWStepOperands {
  Tensor params;  // updated
  Tensor grads;
  Tensor exp_avg, exp_avg_sq;  // f32 like params, starting at zero (step 1 reads them as zero)
  int64_t step = 1;            // t, from 1
  // Or f32 [kAdamWStepScalars] on params' device: -lr / (1 - beta1^t), sqrt(1 - beta2^t) and
  // 1 - lr * weight_decay (kernels/args/optim.h), read when the kernel runs in place of those
  // that options.lr and step give (as SgdStepOperands.lr).
  Tensor step_scalars = {};
};
void adamw_step(const AdamWOptions& options, AdamWStepOperands operands, Stream& stream);

// A segment table for sum_squares and lars_step: i32 [segments, 3], rows {begin, end, flags}
// with begin <= end <= the buffers' size (kernels/args/optim.h).
// sums[s * inputs + k] = sum of input k's squares over [begin_s, end_s), in double, for one
// input (a) or two (a and b, read in the same pass).
struct SumSquaresOperands {
  Tensor a;
  Tensor b = {};  // undefined: one input
  Tensor segments;
  Tensor sums;                 // f64 [segments, inputs]
  Tensor partials;             // f64 workspace of sum_squares_partials(...) elements
  int blocks_per_segment = 1;  // in [1, 65535]: the blocks that share each segment
};
void sum_squares(SumSquaresOperands operands, Stream& stream);
// How sum_squares splits its work, which sizes its partials.
struct SumSquaresPartition {
  int64_t segments = 0;
  int blocks_per_segment = 1;
  int inputs = 1;  // 1 (a) or 2 (a and b)
};
int64_t sum_squares_partials(const SumSquaresPartition& partition);

// torch.nn.utils.clip_grad_norm_(max_norm, norm_type=2) given the gradients' squared global
// norm: grads *= min(1, max_norm / (norm + 1e-6)).
struct ClipGradOperands {
  Tensor grads;          // scaled in place
  Tensor sum_squares;    // f64, one element, from sum_squares
  float max_norm = 0.f;  // finite and > 0: the default is refused
};
void clip_grad(ClipGradOperands operands, Stream& stream);

// LARS as in the MLPerf Training ResNet-50 reference (You, Gitman, Ginsburg, "Large Batch
// Training of Convolutional Networks", arXiv:1708.03888; MLPerf's TensorFlow LARSOptimizer
// puts the rate inside the momentum), per parameter tensor w with gradient g:
//   adapted (conv and linear weights):
//     trust = eta * ||w|| / (||g|| + wd * ||w|| + epsilon)   (1 when ||w|| or ||g|| is 0)
//     v = momentum * v + lr * trust * (g + wd * w)
//   excluded (BatchNorm weights and biases, biases): v = momentum * v + lr * g
//   w -= v
// g is grad * grad_scale. sum_squares is f64 [segments, 2]: sum_squares of (params, grads)
// over the same segment table, whose flags say which tensors are adapted. The momentum buffer
// starts at zero (no first-step special case, unlike torch.optim.SGD).
struct LarsStepOperands {
  Tensor params;  // updated
  Tensor grads;
  Tensor momentum_buffer;  // updated
  Tensor segments;
  Tensor sum_squares;  // f64 [segments, 2]
  Tensor lr = {};      // or the rate in device memory, as SgdStepOperands.lr
};
void lars_step(const LarsOptions& options, LarsStepOperands operands, Stream& stream);

}  // namespace engine
