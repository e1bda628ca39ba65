// CPU twins of the CUDA pooling entry points (kernels/cuda/pool.h): same arguments, host
// pointers, no stream. Activations are NHWC of dtype: x and dx [n, h, w, c], y and dy
// [n, out_h, out_w, c] with out = floor((in + 2 * padding - kernel) / stride) + 1; argmax is
// i32 (see kernels/ops/pool.h).
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace engine::cpu {

void maxpool2d_forward(DType dtype, const void* x, void* y, int32_t* argmax, int64_t n, int64_t h,
                       int64_t w, int64_t c, int kernel, int stride, int padding);
void maxpool2d_backward(DType dtype, const void* dy, const int32_t* argmax, void* dx, int64_t n,
                        int64_t h, int64_t w, int64_t c, int kernel, int stride, int padding);

// x [n, spatial, c] -> y [n, c], spatial = H * W.
void global_avgpool_forward(DType dtype, const void* x, void* y, int64_t n, int64_t spatial,
                            int64_t c);
void global_avgpool_backward(DType dtype, const void* dy, void* dx, int64_t n, int64_t spatial,
                             int64_t c);

}  // namespace engine::cpu
