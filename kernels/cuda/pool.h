// CUDA entry points of the pooling family (defined in pool.cuh, compiled by pool.cu): the
// argument structs of kernels/args/pool.h with device pointers, and the stream. The CPU twins
// (kernels/cpu/pool.h) take the same structs.
#pragma once

#include "kernels/args/pool.h"
#include "kernels/cuda/cuda_runtime.h"

namespace engine::cuda {

void maxpool2d_forward(const MaxPool2dForwardArgs& args, cudaStream_t stream);
void maxpool2d_backward(const MaxPool2dBackwardArgs& args, cudaStream_t stream);
void global_avgpool_forward(const GlobalAvgPoolForwardArgs& args, cudaStream_t stream);
void global_avgpool_backward(const GlobalAvgPoolBackwardArgs& args, cudaStream_t stream);

}  // namespace engine::cuda
