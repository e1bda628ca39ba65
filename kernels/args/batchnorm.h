// Arguments of the batchnorm family's entry points, one struct per entry point, shared by the
// dispatcher that checks and fills it (kernels/ops/batchnorm.cpp), the CPU twin
// (kernels/cpu/batchnorm.h) and the CUDA launcher (kernels/cuda/batchnorm.h): a parameter is
// added here once, and every call site names each field with a designated initializer, so two
// pointers of one type cannot trade places unseen. kernels/ops/batchnorm.h says what each phase
// computes and the layouts of the per-channel vectors.
// Activations are [rows, channels] of dtype (device pointers on CUDA); "or null": optional.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace engine {

struct BatchNormStatsToSumsArgs {
  const float* stats = nullptr;  // f32[2C+1]
  int64_t channels = 0;
  double* sums = nullptr;  // f64[2C+1]: sum, sumsq, count
};

struct BatchNormFinalizeSumsArgs {
  const double* sums = nullptr;  // f64[2C+1]
  int64_t channels = 0;
  float momentum = 0.f;
  float eps = 0.f;
  float* running_mean = nullptr;  // f32[C] or null
  float* running_var = nullptr;   // f32[C] or null
  float* batch_stats = nullptr;   // f32[2C+1]: mean, invstd, count
  // Or null: also the coefficients the next convolution reads its input through
  // (conv_input_from_batchnorm's scale and shift of batch_stats with weight and bias, the same
  // bits), so that a BatchNorm whose apply that convolution does needs no launch of its own.
  float* input_scale = nullptr;   // f32[C]
  float* input_shift = nullptr;   // f32[C], with input_scale
  const float* weight = nullptr;  // f32[C] or null (1), read with input_scale
  const float* bias = nullptr;    // f32[C] or null (0)
};

// The statistics; their merge may also do the next phases for the same launch: sums (then
// stats_to_sums is done), and, with finalize.batch_stats too, the finalize (whose sums and
// channels are these; its other fields are finalize's). Without SyncBN the forward's
// statistics are then one reduction.
struct BatchNormStatsArgs {
  DType dtype = DType::f32;
  const void* x = nullptr;
  int64_t rows = 0;
  int64_t channels = 0;
  float* stats = nullptr;      // f32[2C+1]: mean, m2, count
  float* workspace = nullptr;  // CUDA: batchnorm_workspace_numel floats; the CPU needs none
  double* sums = nullptr;      // f64[2C+1] or null
  BatchNormFinalizeSumsArgs finalize = {};  // batch_stats null: no finalize (needs sums)
};

// y = act((x - mean) * invstd * weight + bias [+ residual]) with the batch's statistics.
struct BatchNormNormalizeArgs {
  DType dtype = DType::f32;
  const void* x = nullptr;
  const float* batch_stats = nullptr;
  const float* weight = nullptr;   // f32[C] or null (1)
  const float* bias = nullptr;     // f32[C] or null (0)
  const void* residual = nullptr;  // like x, or null
  bool relu = false;
  void* y = nullptr;  // may alias x or residual
  int64_t rows = 0;
  int64_t channels = 0;
};

// The same transform with the running statistics.
struct BatchNormEvalForwardArgs {
  DType dtype = DType::f32;
  const void* x = nullptr;
  const float* running_mean = nullptr;  // f32[C]
  const float* running_var = nullptr;   // f32[C]
  const float* weight = nullptr;        // f32[C] or null (1)
  const float* bias = nullptr;          // f32[C] or null (0)
  float eps = 0.f;
  const void* residual = nullptr;  // like x, or null
  bool relu = false;
  void* y = nullptr;  // may alias x or residual
  int64_t rows = 0;
  int64_t channels = 0;
};

// relu_output: the layer's output y when a ReLU followed BatchNorm (fused into normalize);
// then dy is the gradient at the ReLU's output and passes where y > 0 (torch's
// threshold_backward), in both backward passes: no separate relu_backward pass.
// relu_scale / relu_shift: the same mask where y was never stored (the next convolution
// applied BatchNorm and ReLU as it loaded x), recomputed from x as
// conv_input_value(x, relu_scale[c], relu_shift[c], true) > 0: the bits that convolution read.
struct BatchNormBackwardReduceArgs {
  DType dtype = DType::f32;
  const void* dy = nullptr;
  const void* x = nullptr;
  const float* batch_stats = nullptr;
  float* grad_sums = nullptr;  // f32[2C]: sum dy, sum dy * xhat
  int64_t rows = 0;
  int64_t channels = 0;
  float* workspace = nullptr;         // CUDA: batchnorm_workspace_numel floats; the CPU needs none
  const void* relu_output = nullptr;  // like x, or null
  // The mask recomputed from x: f32[C] each, both or neither; exclusive with relu_output.
  const float* relu_scale = nullptr;
  const float* relu_shift = nullptr;
  // Like x, or null (needs either ReLU): also gets dy through the ReLU, for a consumer beyond
  // BatchNorm (a residual's branch); the element-wise pass may then read it as its dy.
  void* relu_grad = nullptr;
  // Also written from the same sums: the bias gradient (sum dy) and the weight gradient (sum
  // dy * xhat), f32[C] or null; added to what they hold when accumulate.
  float* bias_grad = nullptr;
  float* weight_grad = nullptr;
  bool accumulate = false;
};

struct BatchNormBackwardElementwiseArgs {
  DType dtype = DType::f32;
  const void* dy = nullptr;
  const void* x = nullptr;
  const float* batch_stats = nullptr;
  const float* weight = nullptr;  // f32[C] or null (1)
  const float* grad_sums = nullptr;
  void* dx = nullptr;  // may alias dy
  int64_t rows = 0;
  int64_t channels = 0;
  const void* relu_output = nullptr;  // like x, or null: see BatchNormBackwardReduceArgs
  // The mask recomputed from x, exclusive with relu_output: see BatchNormBackwardReduceArgs.
  const float* relu_scale = nullptr;
  const float* relu_shift = nullptr;
};

}  // namespace engine
