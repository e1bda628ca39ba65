// BatchNorm as separate phases (implemented in kernels/ops/batchnorm.cpp), so that SyncBN
// can exchange statistics between them. x, y, dy, dx and residual are activations of shape
// [..., C] (NHWC: rows = N*H*W, channels innermost), f32 or bf16; the sums are f64 and every
// other tensor is f32.
//
// Training forward:  batchnorm_stats -> batchnorm_stats_to_sums -> [SyncBN: all_reduce(sum)
//                    of the sums] -> batchnorm_finalize_sums -> batchnorm_normalize
// Training backward: batchnorm_backward_reduce -> [SyncBN: all_reduce(sum)] ->
//                    batchnorm_backward_elementwise
// Evaluation:        batchnorm_eval_forward
// Plain BatchNorm runs the same phases without the all-reduces, so SyncBN on one rank gives
// BatchNorm's bits. batchnorm_stats can finish the phases up to the all-reduce (or, without
// one, up to the normalize) in its own launch (BatchNormStatsFusion); the backward reduce
// writes the parameter gradients and both backward passes take a fused ReLU's gradient
// (BatchNormBackwardFusion). On CUDA each reduction is one launch (its last block merges), so a
// training step takes 2 launches forward (3 under SyncBN) and 2 backward where the separate
// phases and ops took 5 and 5-6, with the same bits.
//
// Layouts of the per-channel vectors (1-D tensors):
//   stats       f32[2C+1]  mean[C], m2[C], count   Welford form: m2 = sum of (x - mean)^2,
//                          computed stably (shifted sums per slice of rows, Chan merges).
//   sums        f64[2C+1]  sum[C], sumsq[C], count  sum = count * mean (exact), sumsq = m2 +
//                          count * mean^2: plain sums, so ranks all-reduce them as they are,
//                          8(2C+1) bytes per layer at any world size. fp64 because the
//                          finalize's sumsq/n - mean^2 cancels: at mean 1e3 / std 1 it keeps
//                          ~10 digits of the variance in fp64 and none in fp32. What limits
//                          a multi-rank variance is each rank's fp32 mean (rounded by up to
//                          an ulp: 1e-3 std at mean 1e4), which shifts that rank's rows: a
//                          relative error of ~2 * |rank mean - global mean| * ulp / var, up
//                          to ~1e-4 at mean 1e3 and 1e-3 at 1e4 when ranks' means differ.
//   batch_stats f32[2C+1]  mean[C], invstd[C], count   what normalize and backward read; the
//                          count is the global one under SyncBN.
//   grad_sums   f32[2C]    sum_dy[C], sum_dy_xhat[C]   plain sums: all-reduce them as they are.
//                          This rank's are also its bias and weight gradients (DDP averages
//                          them into the global batch's).
#pragma once

#include <cstdint>

#include "kernels/ops/grad_write.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

constexpr int64_t batchnorm_stats_numel(int64_t channels) {
  return 2 * channels + 1;
}

// What may follow the affine transform in a fused forward: y = act(bn(x) + residual).
struct BatchNormEpilogue {
  Tensor residual;    // undefined: no residual add; else the shape and dtype of x
  bool relu = false;  // max(., 0) last; NaN stays NaN
};

// f32 elements of scratch that batchnorm_stats and batchnorm_backward_reduce need for x
// (0 on the CPU). Allocate it once per layer shape, zeroed (Tensor::zeros: it holds the
// counters with which each reduction's last block finds itself, which every call leaves at
// zero), and reuse it: ops never allocate.
int64_t batchnorm_workspace_numel(const Tensor& x);

// The finalize's constants (batchnorm_finalize_sums).
struct BatchNormConstants {
  float momentum = 0.1f;  // of the running statistics' update
  float eps = 1e-5f;      // added to the variance
};

// The coefficients the next convolution reads this BatchNorm's input through (ConvInputAffine's
// scale and shift, conv_input_from_batchnorm's bits) written by the finalize too, so that a
// BatchNorm whose normalize and ReLU that convolution does needs no launch of its own.
// Undefined scale: not written.
struct BatchNormConvInput {
  Tensor weight = {}, bias = {};  // f32[C] or undefined (affine=False: 1 and 0)
  Tensor scale = {}, shift = {};  // f32[C] each, written
};

// What batchnorm_stats may finish in the same launch (CUDA: in its merging blocks), with the
// same bits as the separate ops. Undefined tensors: not done.
struct BatchNormStatsFusion {
  Tensor sums;  // f64[2C+1]: as batchnorm_stats_to_sums(stats, sums)
  // f32[2C+1] (needs sums): as batchnorm_finalize_sums with these fields. Not under SyncBN,
  // whose sums must be all-reduced first.
  Tensor batch_stats = {};
  Tensor running_mean = {}, running_var = {};  // f32[C] or undefined
  BatchNormConstants constants = {};
  BatchNormConvInput conv_input = {};  // with batch_stats
};

// Per-channel statistics of this process's x: stats = f32[2C+1] (Welford form, see above),
// and what `fusion` asks for.
struct BatchNormStatsOperands {
  Tensor x;
  Tensor stats;
  Tensor workspace;  // of batchnorm_workspace_numel(x) elements
};
void batchnorm_stats(BatchNormStatsOperands operands, Stream& stream,
                     const BatchNormStatsFusion& fusion = {});

// sums = f64[2C+1] (sum, sumsq, count; see above) from this process's stats, on their device.
void batchnorm_stats_to_sums(const Tensor& stats, Tensor& sums, Stream& stream);

// From sums (this process's, or all-reduced over the ranks) in fp64: mean = sum / n, biased
// var = max(sumsq / n - mean^2, 0); writes batch_stats = (mean, 1/sqrt(var + eps), n). When
// running_mean/running_var are defined (f32[C]) they are updated as torch.nn.BatchNorm2d does:
//   running = (1 - momentum) * running + momentum * batch value, with the unbiased variance
//   var * n / (n - 1) (NaN for n <= 1, where PyTorch refuses to train; the layer checks n).
// For PyTorch's momentum=None (cumulative average) pass momentum = 1 / batches_tracked.
struct BatchNormFinalizeSumsOperands {
  Tensor sums;
  Tensor running_mean = {}, running_var = {};  // f32[C] each, updated; or undefined
  Tensor batch_stats;
  BatchNormConstants constants = {};
  BatchNormConvInput conv_input = {};
};
void batchnorm_finalize_sums(BatchNormFinalizeSumsOperands operands, Stream& stream);

// y = act((x - mean) * invstd * weight + bias [+ residual]).
struct BatchNormNormalizeOperands {
  Tensor x;
  Tensor batch_stats;
  Tensor weight = {}, bias = {};  // f32[C] or undefined (affine=False: 1 and 0)
  Tensor y;                       // may alias x or the residual
};
void batchnorm_normalize(BatchNormNormalizeOperands operands, Stream& stream,
                         const BatchNormEpilogue& epilogue = {});

// Evaluation: the same transform with the running statistics,
// y = act((x - running_mean) / sqrt(running_var + eps) * weight + bias [+ residual]).
struct BatchNormEvalForwardOperands {
  Tensor x;
  Tensor running_mean, running_var;  // f32[C] each
  Tensor weight = {}, bias = {};     // f32[C] or undefined (affine=False: 1 and 0)
  Tensor y;                          // may alias x or the residual
  float eps = 1e-5f;                 // added to the variance
};
void batchnorm_eval_forward(BatchNormEvalForwardOperands operands, Stream& stream,
                            const BatchNormEpilogue& epilogue = {});

// The ReLU fused after a BatchNorm's forward, as its backward passes see it: dy passes where
// the ReLU's output y > 0. y is read from `output` (normalize's, like x) or, where it was never
// stored (the next convolution applied BatchNorm and ReLU as it loaded x: kernels/ops/conv.h's
// ConvInputAffine), recomputed from x as conv_input_value(x, scale[c], shift[c], true): the bits
// that convolution read. Nothing defined: no ReLU.
struct BatchNormReluGate {
  Tensor output = {};
  Tensor scale = {}, shift = {};  // f32[C] each, both or neither; not with output
  bool active() const { return output.defined() || scale.defined() || shift.defined(); }
};

// What the backward passes fold in. relu: when the forward fused a ReLU (epilogue.relu), dy
// is the gradient at the ReLU's output and passes where y > 0, 0 elsewhere (relu_backward's
// rule, torch's threshold_backward), read in both passes instead of a relu_backward pass of
// its own. relu_grad (like x, needs relu; batchnorm_backward_reduce only): also receives that
// gradient, for a residual's branch (the element-wise pass may then take it as its dy).
// bias_grad / weight_grad (f32[C], batchnorm_backward_reduce only): written with this rank's
// sum dy / sum dy * xhat (overwritten or accumulated), the gradients as PyTorch's SyncBN has
// them too.
struct BatchNormBackwardFusion {
  BatchNormReluGate relu;
  Tensor relu_grad;
  Tensor bias_grad, weight_grad;
  GradWrite write = GradWrite::overwrite;
};

// grad_sums = (sum over rows of dy, sum of dy * xhat) with xhat = (x - mean) * invstd, for
// this process's rows.
struct BatchNormBackwardReduceOperands {
  Tensor dy;  // at the BN output, or at the fused ReLU's output with fusion.relu
  Tensor x;
  Tensor batch_stats;
  Tensor grad_sums;
  Tensor workspace;  // of batchnorm_workspace_numel(x) elements
};
void batchnorm_backward_reduce(BatchNormBackwardReduceOperands operands, Stream& stream,
                               const BatchNormBackwardFusion& fusion = {});

// dx = weight * invstd * (dy - sum_dy / n - xhat * sum_dy_xhat / n), with n the count in
// batch_stats (the global count under SyncBN) and grad_sums reduced over all ranks; dy
// through the fused ReLU when relu is active (as in BatchNormBackwardFusion).
struct BatchNormBackwardElementwiseOperands {
  Tensor dy;
  Tensor x;
  Tensor batch_stats;
  Tensor weight = {};  // f32[C] or undefined (affine=False: 1)
  Tensor grad_sums;
  Tensor dx;  // may alias dy
};
void batchnorm_backward_elementwise(BatchNormBackwardElementwiseOperands operands, Stream& stream,
                                    const BatchNormReluGate& relu = {});

}  // namespace engine
