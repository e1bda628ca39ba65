// CUDA entry points of the optimizer kernels (defined in optim.cuh, compiled by optim.cu): the
// argument struct of kernels/args/optim.h with device pointers, and the stream. The CPU twin
// (kernels/cpu/optim.h) takes the same struct.
#pragma once

#include "kernels/args/optim.h"
#include "kernels/cuda/cuda_runtime.h"

namespace engine::cuda {

void sgd_step(const SgdStepArgs& args, cudaStream_t stream);
void adamw_step(const AdamWStepArgs& args, cudaStream_t stream);
void sum_squares(const SumSquaresArgs& args, cudaStream_t stream);
void clip_grad(const ClipGradArgs& args, cudaStream_t stream);
void lars_step(const LarsStepArgs& args, cudaStream_t stream);

}  // namespace engine::cuda
