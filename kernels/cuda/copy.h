// CUDA entry points of fill and cast (defined in copy.cuh, compiled by copy.cu). Plain
// copies are cudaMemcpyAsync (kernels/cuda/cuda_runtime.h), not kernels.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/dtype.h"

namespace engine::cuda {

void fill(DType dtype, void* dst, int64_t n, float value, cudaStream_t stream);
void cast(DType src_dtype, const void* src, DType dst_dtype, void* dst, int64_t n,
          cudaStream_t stream);

}  // namespace engine::cuda
