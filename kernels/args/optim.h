// Arguments of the fused SGD step, shared by the dispatcher (kernels/ops/optim.cpp), the CPU
// twin (kernels/cpu/optim.h) and the CUDA launcher (kernels/cuda/optim.h); see
// kernels/args/batchnorm.h for why. kernels/ops/optim.h says what the step computes.
#pragma once

#include <cstdint>

namespace engine {

// torch.optim.SGD's hyperparameters (maximize=False), plus a factor applied to the
// gradients first (1/world size for averaging, or unscaling).
struct SgdOptions {
  float lr = 0.1f;
  float momentum = 0.f;
  float dampening = 0.f;
  float weight_decay = 0.f;
  bool nesterov = false;  // needs momentum > 0 and dampening = 0, as PyTorch
  float grad_scale = 1.f;
};

struct SgdStepArgs {
  float* params = nullptr;
  const float* grads = nullptr;
  float* momentum_buffer = nullptr;  // or null when options.momentum == 0
  int64_t n = 0;
  SgdOptions options;
  bool first_step = false;  // the momentum buffer holds nothing yet
};

}  // namespace engine
