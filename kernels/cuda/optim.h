// CUDA entry point of the fused SGD step (defined in optim.cuh, compiled by optim.cu). The
// CPU twin (kernels/cpu/optim.h) takes the same arguments minus the stream.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_runtime.h"

namespace engine::cuda {

void sgd_step(float* params, const float* grads, float* momentum_buffer, int64_t n, float lr,
              float momentum, float dampening, float weight_decay, bool nesterov, float grad_scale,
              bool first_step, cudaStream_t stream);

}  // namespace engine::cuda
