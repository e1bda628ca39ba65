// BatchNorm as separate phases (implemented in kernels/ops/batchnorm.cpp), so that SyncBN
// can exchange statistics between them. x, y, dy, dx and residual are activations of shape
// [..., C] (NHWC: rows = N*H*W, channels innermost), f32 or bf16; every other tensor is f32.
//
// Training forward:  batchnorm_stats -> [SyncBN: all_gather] -> batchnorm_finalize ->
//                    batchnorm_normalize
// Training backward: batchnorm_backward_reduce -> [SyncBN: all_reduce(sum)] ->
//                    batchnorm_backward_elementwise
// Evaluation:        batchnorm_eval_forward
//
// Layouts of the per-channel vectors (1-D f32 tensors):
//   stats       [2C+1]  mean[C], m2[C], count   Welford form: m2 = sum of (x - mean)^2.
//                       Merged exactly (Chan et al.) by batchnorm_finalize, so no rank ever
//                       subtracts two large sums (a sum/sum-of-squares all-reduce in fp32
//                       loses the variance entirely for inputs of mean 1e3 and std 1).
//   batch_stats [2C+1]  mean[C], invstd[C], count   what normalize and backward read.
//   grad_sums   [2C]    sum_dy[C], sum_dy_xhat[C]   plain sums: all-reduce them as they are.
//                       They are also the gradients of bias and weight.
#pragma once

#include <cstdint>

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
// (0 on the CPU). Allocate it once per layer shape and reuse it: ops never allocate.
int64_t batchnorm_workspace_numel(const Tensor& x);

// Per-channel statistics of this process's x: stats = f32[2C+1] (Welford form, see above).
void batchnorm_stats(const Tensor& x, Tensor& stats, Tensor& workspace, Stream& stream);

// Merges k partial stats (f32[2C+1], or f32[k, 2C+1] gathered from k ranks) and writes
// batch_stats = (mean, 1/sqrt(biased var + eps), count). When running_mean/running_var are
// defined (f32[C]) they are updated as torch.nn.BatchNorm2d does:
//   running = (1 - momentum) * running + momentum * batch value, with the unbiased variance
//   var * n / (n - 1) (NaN for n = 1, where PyTorch refuses to train; the layer checks n).
// For PyTorch's momentum=None (cumulative average) pass momentum = 1 / batches_tracked.
void batchnorm_finalize(const Tensor& stats, Tensor& running_mean, Tensor& running_var,
                        float momentum, float eps, Tensor& batch_stats, Stream& stream);

// y = act((x - mean) * invstd * weight + bias [+ residual]). weight and bias are f32[C] or
// undefined (affine=False: 1 and 0). y may alias x or the residual.
void batchnorm_normalize(const Tensor& x, const Tensor& batch_stats, const Tensor& weight,
                         const Tensor& bias, Tensor& y, Stream& stream,
                         const BatchNormEpilogue& epilogue = {});

// Evaluation: the same transform with the running statistics,
// y = act((x - running_mean) / sqrt(running_var + eps) * weight + bias [+ residual]).
void batchnorm_eval_forward(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                            const Tensor& weight, const Tensor& bias, float eps, Tensor& y,
                            Stream& stream, const BatchNormEpilogue& epilogue = {});

// grad_sums = (sum over rows of dy, sum of dy * xhat) with xhat = (x - mean) * invstd, for
// this process's rows. dy is the gradient at the BN output (after any ReLU backward).
void batchnorm_backward_reduce(const Tensor& dy, const Tensor& x, const Tensor& batch_stats,
                               Tensor& grad_sums, Tensor& workspace, Stream& stream);

// dx = weight * invstd * (dy - sum_dy / n - xhat * sum_dy_xhat / n), with n the count in
// batch_stats (the global count under SyncBN) and grad_sums reduced over all ranks.
// dx may alias dy.
void batchnorm_backward_elementwise(const Tensor& dy, const Tensor& x, const Tensor& batch_stats,
                                    const Tensor& weight, const Tensor& grad_sums, Tensor& dx,
                                    Stream& stream);

}  // namespace engine
