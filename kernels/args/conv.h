// Arguments of the conv2d entry points, one struct per entry point, shared by the dispatcher
// (kernels/ops/conv.cpp), the CPU twin (kernels/cpu/conv.h) and the CUDA launcher
// (kernels/cuda/conv.h); see kernels/args/batchnorm.h for why. NHWC activations and KRSC
// filters of dtype (kernels/conv_shape.h); bias and dbias fp32; device pointers on CUDA. The
// workspace, fp32_math and algo are read by the CUDA launcher only: the CPU keeps its scratch
// (kernels/cpu/scratch.h) and multiplies in exact fp32.
#pragma once

#include <cstdint>

#include "kernels/args/batchnorm.h"
#include "kernels/conv_algo.h"
#include "kernels/conv_shape.h"
#include "kernels/dtype.h"
#include "kernels/fp32_math.h"

namespace engine {

// The activation a convolution reads, normalized as it is loaded: x is read as
// act(x * scale[c] + shift[c]) at input channel c (act: max(., 0) with relu, NaN staying NaN),
// while the convolution's zero padding stays 0. BatchNorm-apply and ReLU of the layer before
// (scale = invstd * weight, shift = bias - mean * scale) then never write their output.
// scale and shift are f32[C] (device pointers on CUDA); scale null: no transform.
struct ConvInputTransform {
  const float* scale = nullptr;  // or null
  const float* shift = nullptr;
  bool relu = false;
  bool active() const { return scale != nullptr; }
};

// The transform that applies BatchNorm's batch statistics (f32[2C+1]: mean[C], invstd[C],
// count) with weight and bias (f32[C], or null: 1 and 0) in a convolution's operand loads:
// scale[c] = invstd * weight, shift[c] = bias - mean * scale (kernels/conv_input_value.h).
struct ConvInputFromBatchNormArgs {
  // f32[2C+1] (mean, invstd, count): training. Or, null, evaluation's running statistics: mean
  // from running_mean, invstd = 1 / sqrt(running_var + eps) (as batchnorm_eval_forward).
  const float* batch_stats = nullptr;
  const float* running_mean = nullptr;
  const float* running_var = nullptr;
  float eps = 0.f;
  const float* weight = nullptr;  // or null
  const float* bias = nullptr;    // or null
  int64_t channels = 0;
  float* scale = nullptr;  // f32[C]
  float* shift = nullptr;  // f32[C]
};

// y = conv(x, w) (+ bias[k]).
struct Conv2dForwardArgs {
  Conv2dShape shape;
  DType dtype = DType::f32;
  const void* x = nullptr;
  const void* w = nullptr;
  const float* bias = nullptr;  // or null
  void* y = nullptr;
  void* workspace = nullptr;  // null (never split K) or conv2d_forward_workspace_bytes
  // With a split K: the counters by which each output tile's last split to finish sums the
  // tile's partials (conv2d_split_counters_bytes, zeroed once; every call leaves them zero);
  // null: a second launch sums them.
  unsigned* split_counters = nullptr;
  Fp32Math fp32_math = Fp32Math::exact;
  ConvAlgo algo =
      {};  // the CUDA kernels to run ({}: the heuristic's); the workspace is sized for it
  // f32[2C+1] or null: also batchnorm_stats(y) (kernels/ops/batchnorm.h's stats); on CUDA
  // through conv2d_forward_stats, with conv2d_forward_stats_workspace_bytes of workspace.
  float* stats = nullptr;
  // With stats: what batchnorm_stats may finish too (BatchNormStatsArgs' sums and finalize).
  double* stats_sums = nullptr;                   // f64[2C+1] or null
  BatchNormFinalizeSumsArgs stats_finalize = {};  // batch_stats null: no finalize (needs sums)
  ConvInputTransform input_transform = {};        // x as read; none by default
};

// How conv2d_forward_stats gets y's statistics: in the convolution's epilogue, or by
// batchnorm_stats on y after it (where the epilogue cannot: split K, the direct epilogue, the
// fp32 SIMT engine, a y whose rows are not 16-byte runs).
enum class ConvStatsPath : uint8_t { epilogue, separate_pass };

// The BatchNorm + ReLU whose output a convolution read, for the input-gradient pass to do that
// BatchNorm's backward reduction too: dx then holds g' = dL/da where a > 0, else 0 (the
// gradient at the BatchNorm's output a, rounded to dtype as stored, after dx_add if any), and
// grad_sums = (sum g', invstd * sum g' (x - mean)), with the parameter gradients, are
// batchnorm_backward_reduce's of g' (its relu gate, its relu_grad); the BatchNorm's element-wise
// pass then reads dx as its dy, without a gate. The mask comes from either
//   - relu_scale/relu_shift: the convolution read x through its input transform
//     (a = relu(x * scale + shift), conv_input_from_batchnorm), a recomputed; or
//   - relu_output: a itself, stored (a residual block's output, BatchNorm + identity + ReLU,
//     which the next block's first convolution reads as it is and its identity branch too:
//     dx_add then carries that branch's gradient, so dx is the whole gradient at a).
// On CUDA through conv2d_backward_data_bn.
struct ConvDataGradBatchNorm {
  const void* x = nullptr;             // the BatchNorm's input, like dx; null: no fusion
  const float* batch_stats = nullptr;  // f32[2C+1]: mean, invstd, count
  const float* relu_scale = nullptr;   // f32[C]: the forward's transform (its mask)
  const float* relu_shift = nullptr;   // f32[C]
  const void* relu_output = nullptr;   // like dx, exclusive with relu_scale/relu_shift
  float* grad_sums = nullptr;          // f32[2C]
  float* bias_grad = nullptr;          // f32[C] or null: sum g'
  float* weight_grad = nullptr;        // f32[C] or null: sum g' xhat
  bool accumulate = false;             // add to bias_grad / weight_grad
  bool active() const { return x != nullptr; }
};

// dx = conv^T(dy, w) (+ dx_add); overwrites dx.
struct Conv2dBackwardDataArgs {
  Conv2dShape shape;
  DType dtype = DType::f32;
  const void* dy = nullptr;
  const void* w = nullptr;
  void* dx = nullptr;
  // Like dx, or null: added to the gradient with a separate add's bits (dx rounded to dtype,
  // then the sum rounded): a residual block's identity branch. On CUDA only where
  // conv2d_backward_data_adds says the epilogue can, or with a batchnorm gated by relu_output.
  const void* dx_add = nullptr;
  void* workspace = nullptr;  // null (never split K) or conv2d_backward_data_workspace_bytes
  // With a split K: the counters by which each output tile's last split to finish sums the
  // tile's partials (conv2d_split_counters_bytes, zeroed once; every call leaves them zero);
  // null: a second launch sums them.
  unsigned* split_counters = nullptr;
  Fp32Math fp32_math = Fp32Math::exact;
  ConvAlgo algo =
      {};  // the CUDA kernels to run ({}: the heuristic's); the workspace is sized for it
  // Active: dx gated and the BatchNorm's backward sums too (above); on CUDA through
  // conv2d_backward_data_bn, with conv2d_backward_data_bn_workspace_bytes of workspace.
  ConvDataGradBatchNorm batchnorm = {};
};

// dw (+)= the sum over output pixels of dy (x) im2col(x); dbias (+)= the column sums of dy.
// With an input_transform, im2col of the transformed x (dw_dtype f32 then).
struct Conv2dBackwardFilterArgs {
  Conv2dShape shape;
  DType dtype = DType::f32;  // of x and dy
  const void* x = nullptr;
  const void* dy = nullptr;
  DType dw_dtype = DType::f32;  // fp32 (master weights) or dtype
  void* dw = nullptr;
  float* dbias = nullptr;     // or null
  bool accumulate = false;    // add to dw (and dbias) instead of overwriting
  void* workspace = nullptr;  // CUDA: conv2d_backward_filter_workspace_bytes
  // With a split K: the counters by which each output tile's last split to finish sums the
  // tile's partials (conv2d_split_counters_bytes, zeroed once; every call leaves them zero);
  // null: a second launch sums them.
  unsigned* split_counters = nullptr;
  Fp32Math fp32_math = Fp32Math::exact;
  ConvAlgo algo =
      {};  // the CUDA kernels to run ({}: the heuristic's); the workspace is sized for it
  ConvInputTransform input_transform = {};  // x as read; none by default
};

}  // namespace engine
