// CUDA entry points of the pooling family (defined in pool.cuh, compiled by pool.cu). The
// CPU twins (kernels/cpu/pool.h) take the same arguments minus the stream.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/dtype.h"

namespace engine::cuda {

void maxpool2d_forward(DType dtype, const void* x, void* y, int32_t* argmax, int64_t n, int64_t h,
                       int64_t w, int64_t c, int kernel, int stride, int padding,
                       cudaStream_t stream);
void maxpool2d_backward(DType dtype, const void* dy, const int32_t* argmax, void* dx, int64_t n,
                        int64_t h, int64_t w, int64_t c, int kernel, int stride, int padding,
                        cudaStream_t stream);
void global_avgpool_forward(DType dtype, const void* x, void* y, int64_t n, int64_t spatial,
                            int64_t c, cudaStream_t stream);
void global_avgpool_backward(DType dtype, const void* dy, void* dx, int64_t n, int64_t spatial,
                             int64_t c, cudaStream_t stream);

}  // namespace engine::cuda
