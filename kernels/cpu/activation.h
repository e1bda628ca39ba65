// CPU twins of the CUDA activation entry points (kernels/cuda/activation.h): same
// arguments, host pointers, no stream.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace engine::cpu {

void relu_forward(DType dtype, const void* x, void* y, int64_t n);
void relu_backward(DType dtype, const void* y, const void* dy, void* dx, int64_t n);
void add_relu_forward(DType dtype, const void* a, const void* b, void* y, int64_t n);
void add(DType dtype, const void* a, const void* b, void* y, int64_t n);

}  // namespace engine::cpu
