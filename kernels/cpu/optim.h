// CPU twins of the CUDA optimizer entry points (kernels/cuda/optim.h): the same argument
// structs (kernels/args/optim.h) with host pointers, no stream.
#pragma once

#include "kernels/args/optim.h"

namespace engine::cpu {

void sgd_step(const SgdStepArgs& args);
void adamw_step(const AdamWStepArgs& args);
void sum_squares(const SumSquaresArgs& args);
void clip_grad(const ClipGradArgs& args);
void lars_step(const LarsStepArgs& args);

}  // namespace engine::cpu
