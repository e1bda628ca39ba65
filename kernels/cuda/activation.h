// CUDA entry points of the activation family (defined in activation.cuh, compiled by
// activation.cu): the argument structs of kernels/args/activation.h with device pointers, and
// the stream. The CPU twins (kernels/cpu/activation.h) take the same structs.
#pragma once

#include "kernels/args/activation.h"
#include "kernels/cuda/cuda_runtime.h"

namespace engine::cuda {

void relu_forward(const ReluForwardArgs& args, cudaStream_t stream);
void relu_backward(const ReluBackwardArgs& args, cudaStream_t stream);
void add(const AddArgs& args, cudaStream_t stream);

}  // namespace engine::cuda
