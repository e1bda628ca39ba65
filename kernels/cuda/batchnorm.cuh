// The batchnorm family: reduction phases (batchnorm_reduce.cuh), the fp64 sums and their
// finalization (batchnorm_sums.cuh), element-wise phases (batchnorm_apply.cuh), and the
// entry points declared in batchnorm.h.
#pragma once

#include "kernels/cuda/batchnorm.h"
#include "kernels/cuda/batchnorm_apply.cuh"
#include "kernels/cuda/batchnorm_reduce.cuh"
#include "kernels/cuda/batchnorm_sums.cuh"

namespace engine::cuda {

int64_t batchnorm_workspace_numel(int64_t rows, int64_t channels) {
  return batchnorm_workspace_numel(rows, channels, ChannelReduceLaunch{});
}

void batchnorm_stats(DType dtype, const void* x, int64_t rows, int64_t channels, float* stats,
                     float* workspace, cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    batchnorm_stats_launch(static_cast<const T*>(x), rows, channels, stats, workspace, stream);
  });
}

void batchnorm_stats_to_sums(const float* stats, int64_t channels, double* sums,
                             cudaStream_t stream) {
  batchnorm_stats_to_sums_launch(stats, channels, sums, stream);
}

void batchnorm_finalize_sums(const double* sums, int64_t channels, float momentum, float eps,
                             float* running_mean, float* running_var, float* batch_stats,
                             cudaStream_t stream) {
  batchnorm_finalize_sums_launch(sums, channels, momentum, eps, running_mean, running_var,
                                 batch_stats, stream);
}

void batchnorm_normalize(DType dtype, const void* x, const float* batch_stats, const float* weight,
                         const float* bias, const void* residual, bool relu, void* y, int64_t rows,
                         int64_t channels, cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    batchnorm_normalize_launch(static_cast<const T*>(x), batch_stats, weight, bias,
                               static_cast<const T*>(residual), relu, static_cast<T*>(y), rows,
                               channels, stream);
  });
}

void batchnorm_eval_forward(DType dtype, const void* x, const float* running_mean,
                            const float* running_var, const float* weight, const float* bias,
                            float eps, const void* residual, bool relu, void* y, int64_t rows,
                            int64_t channels, cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    batchnorm_eval_forward_launch(static_cast<const T*>(x), running_mean, running_var, weight, bias,
                                  eps, static_cast<const T*>(residual), relu, static_cast<T*>(y),
                                  rows, channels, stream);
  });
}

void batchnorm_backward_reduce(DType dtype, const void* dy, const void* x, const float* batch_stats,
                               float* grad_sums, int64_t rows, int64_t channels, float* workspace,
                               cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    batchnorm_backward_reduce_launch(static_cast<const T*>(dy), static_cast<const T*>(x),
                                     batch_stats, grad_sums, rows, channels, workspace, stream);
  });
}

void batchnorm_backward_elementwise(DType dtype, const void* dy, const void* x,
                                    const float* batch_stats, const float* weight,
                                    const float* grad_sums, void* dx, int64_t rows,
                                    int64_t channels, cudaStream_t stream) {
  dispatch_device_dtype(dtype, [&]<typename T>() {
    batchnorm_backward_elementwise_launch(static_cast<const T*>(dy), static_cast<const T*>(x),
                                          batch_stats, weight, grad_sums, static_cast<T*>(dx), rows,
                                          channels, stream);
  });
}

}  // namespace engine::cuda
