// CUDA entry points of the activation family (defined in activation.cuh, compiled by
// activation.cu). Pointers are device pointers of dtype elements.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/dtype.h"

namespace engine::cuda {

void relu_forward(DType dtype, const void* x, void* y, int64_t n, cudaStream_t stream);
void relu_backward(DType dtype, const void* y, const void* dy, void* dx, int64_t n,
                   cudaStream_t stream);
void add_relu_forward(DType dtype, const void* a, const void* b, void* y, int64_t n,
                      cudaStream_t stream);
void add(DType dtype, const void* a, const void* b, void* y, int64_t n, cudaStream_t stream);

}  // namespace engine::cuda
