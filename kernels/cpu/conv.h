// CPU twins of the CUDA conv2d entry points (kernels/cuda/conv.h): im2col + sgemm over
// chunks of output rows, NHWC/KRSC throughout. bf16 tensors are widened to fp32, computed in
// fp32 and rounded once on output.
#pragma once

#include "kernels/conv_shape.h"
#include "kernels/dtype.h"

namespace engine::cpu {

// y = conv(x, w) (+ bias[k]); x, w, y of `dtype`, bias fp32 or null.
void conv2d_forward(const Conv2dShape& shape, DType dtype, const void* x, const void* w,
                    const float* bias, void* y);
// dx = conv^T(dy, w); overwrites dx.
void conv2d_backward_data(const Conv2dShape& shape, DType dtype, const void* dy, const void* w,
                          void* dx);
// dw (+)= sum over output pixels of dy (x) im2col(x); dw is fp32 (master weights) or `dtype`.
// dbias (+)= column sums of dy when not null (fp32). accumulate adds instead of overwriting.
void conv2d_backward_filter(const Conv2dShape& shape, DType dtype, const void* x, const void* dy,
                            DType dw_dtype, void* dw, float* dbias, bool accumulate);

}  // namespace engine::cpu
