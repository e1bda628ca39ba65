// CUDA entry points of fill and cast (defined in copy.cuh, compiled by copy.cu): the argument
// structs of kernels/args/copy.h with device pointers, and the stream. Plain copies are
// cudaMemcpyAsync (kernels/cuda/cuda_runtime.h), not kernels.
#pragma once

#include "kernels/args/copy.h"
#include "kernels/cuda/cuda_runtime.h"

namespace engine::cuda {

void fill(const FillArgs& args, cudaStream_t stream);
void cast(const CastArgs& args, cudaStream_t stream);

}  // namespace engine::cuda
