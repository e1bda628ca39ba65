// CUDA entry points of the batchnorm family (defined in batchnorm.cuh, compiled by
// batchnorm.cu). Activations are device pointers to [rows, channels] of dtype; the
// per-channel vectors are f32 (the sums f64) in the layouts of kernels/ops/batchnorm.h. The CPU
// twins (kernels/cpu/batchnorm.h) take the same arguments minus the workspace and the stream.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/dtype.h"

namespace engine::cuda {

// f32 elements of scratch batchnorm_stats and batchnorm_backward_reduce need (their
// per-block partial results, merged by a second kernel: deterministic, no atomics).
int64_t batchnorm_workspace_numel(int64_t rows, int64_t channels);

void batchnorm_stats(DType dtype, const void* x, int64_t rows, int64_t channels, float* stats,
                     float* workspace, cudaStream_t stream);
void batchnorm_stats_to_sums(const float* stats, int64_t channels, double* sums,
                             cudaStream_t stream);
void batchnorm_finalize_sums(const double* sums, int64_t channels, float momentum, float eps,
                             float* running_mean, float* running_var, float* batch_stats,
                             cudaStream_t stream);
void batchnorm_normalize(DType dtype, const void* x, const float* batch_stats, const float* weight,
                         const float* bias, const void* residual, bool relu, void* y, int64_t rows,
                         int64_t channels, cudaStream_t stream);
void batchnorm_eval_forward(DType dtype, const void* x, const float* running_mean,
                            const float* running_var, const float* weight, const float* bias,
                            float eps, const void* residual, bool relu, void* y, int64_t rows,
                            int64_t channels, cudaStream_t stream);
void batchnorm_backward_reduce(DType dtype, const void* dy, const void* x, const float* batch_stats,
                               float* grad_sums, int64_t rows, int64_t channels, float* workspace,
                               cudaStream_t stream);
void batchnorm_backward_elementwise(DType dtype, const void* dy, const void* x,
                                    const float* batch_stats, const float* weight,
                                    const float* grad_sums, void* dx, int64_t rows,
                                    int64_t channels, cudaStream_t stream);

}  // namespace engine::cuda
