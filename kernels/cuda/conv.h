// CUDA entry points of conv2d (defined in conv.cuh, compiled by conv.cu): implicit GEMM on
// NHWC/KRSC tensors; for f32 tensors fp32 SIMT (Fp32Math::exact) or tf32 tensor cores
// (Fp32Math::tf32), for bf16 tensors bf16 tensor cores (fp32 accumulate, fp32_math unread).
// Pointers are device pointers; bias/dbias are fp32.
#pragma once

#include <cstddef>

#include "kernels/conv_shape.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kernels/dtype.h"
#include "kernels/fp32_math.h"

namespace engine::cuda {

// Device workspace conv2d_backward_filter needs (fp32 split-K partials and bias partials).
size_t conv2d_backward_filter_workspace_bytes(const Conv2dShape& shape);

// Device workspace conv2d_forward and conv2d_backward_data use to split K where the output
// has too few tiles to fill the GPU (fp32 partials); 0 where they would not split.
size_t conv2d_forward_workspace_bytes(const Conv2dShape& shape);
size_t conv2d_backward_data_workspace_bytes(const Conv2dShape& shape);

// workspace: null (never split) or the bytes above.
void conv2d_forward(const Conv2dShape& shape, DType dtype, const void* x, const void* w,
                    const float* bias, void* y, void* workspace, Fp32Math fp32_math,
                    cudaStream_t stream);
void conv2d_backward_data(const Conv2dShape& shape, DType dtype, const void* dy, const void* w,
                          void* dx, void* workspace, Fp32Math fp32_math, cudaStream_t stream);
// dw is fp32 (master weights) or dtype; accumulate adds to dw (and dbias) instead of
// overwriting. workspace: conv2d_backward_filter_workspace_bytes(shape) bytes.
void conv2d_backward_filter(const Conv2dShape& shape, DType dtype, const void* x, const void* dy,
                            DType dw_dtype, void* dw, float* dbias, bool accumulate,
                            void* workspace, Fp32Math fp32_math, cudaStream_t stream);

}  // namespace engine::cuda
