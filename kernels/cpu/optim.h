// CPU twin of the CUDA SGD entry point (kernels/cuda/optim.h): the same argument struct
// (kernels/args/optim.h) with host pointers, no stream.
#pragma once

#include "kernels/args/optim.h"

namespace engine::cpu {

void sgd_step(const SgdStepArgs& args);

}  // namespace engine::cpu
