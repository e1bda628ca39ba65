// CUDA entry points of the loss family (defined in loss.cuh, compiled by loss.cu): the
// argument structs of kernels/args/loss.h with device pointers, and the stream. The CPU twins
// (kernels/cpu/loss.h) take the same structs.
#pragma once

#include "kernels/args/loss.h"
#include "kernels/cuda/cuda_runtime.h"

namespace engine::cuda {

void cross_entropy_forward(const CrossEntropyForwardArgs& args, cudaStream_t stream);
void cross_entropy_backward(const CrossEntropyBackwardArgs& args, cudaStream_t stream);
void soft_cross_entropy_forward(const SoftCrossEntropyForwardArgs& args, cudaStream_t stream);
void soft_cross_entropy_backward(const SoftCrossEntropyBackwardArgs& args, cudaStream_t stream);
void topk_correct(const TopkCorrectArgs& args, cudaStream_t stream);

}  // namespace engine::cuda
