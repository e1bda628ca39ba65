// CPU twins of the CUDA fill and cast entry points (kernels/cuda/copy.h).
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace engine::cpu {

void fill(DType dtype, void* dst, int64_t n, float value);
void cast(DType src_dtype, const void* src, DType dst_dtype, void* dst, int64_t n);

}  // namespace engine::cpu
