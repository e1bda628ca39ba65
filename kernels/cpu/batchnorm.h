// CPU twins of the CUDA batchnorm entry points (kernels/cuda/batchnorm.h): the same
// arguments minus the stream and the workspace (the CPU keeps its partial sums on the heap).
// Activations are [rows, channels] of dtype; the per-channel vectors are f32 (the sums f64) in
// the layouts of kernels/ops/batchnorm.h. Pointers marked "or null" are optional.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace engine::cpu {

void batchnorm_stats(DType dtype, const void* x, int64_t rows, int64_t channels, float* stats);

// stats f32[2C+1] -> sums f64[2C+1] (kernels/batchnorm_sums.h).
void batchnorm_stats_to_sums(const float* stats, int64_t channels, double* sums);

// sums f64[2C+1] -> batch_stats f32[2C+1]. running_mean/running_var: or null.
void batchnorm_finalize_sums(const double* sums, int64_t channels, float momentum, float eps,
                             float* running_mean, float* running_var, float* batch_stats);

// weight, bias, residual: or null.
void batchnorm_normalize(DType dtype, const void* x, const float* batch_stats, const float* weight,
                         const float* bias, const void* residual, bool relu, void* y, int64_t rows,
                         int64_t channels);

void batchnorm_eval_forward(DType dtype, const void* x, const float* running_mean,
                            const float* running_var, const float* weight, const float* bias,
                            float eps, const void* residual, bool relu, void* y, int64_t rows,
                            int64_t channels);

void batchnorm_backward_reduce(DType dtype, const void* dy, const void* x, const float* batch_stats,
                               float* grad_sums, int64_t rows, int64_t channels);

// weight: or null.
void batchnorm_backward_elementwise(DType dtype, const void* dy, const void* x,
                                    const float* batch_stats, const float* weight,
                                    const float* grad_sums, void* dx, int64_t rows,
                                    int64_t channels);

}  // namespace engine::cpu
