// CPU twin of the CUDA SGD entry point (kernels/cuda/optim.h): same arguments, host pointers,
// no stream. momentum_buffer may be null when momentum == 0.
#pragma once

#include <cstdint>

namespace engine::cpu {

void sgd_step(float* params, const float* grads, float* momentum_buffer, int64_t n, float lr,
              float momentum, float dampening, float weight_decay, bool nesterov, float grad_scale,
              bool first_step);

}  // namespace engine::cpu
