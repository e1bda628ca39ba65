// CPU twins of the CUDA loss entry points (kernels/cuda/loss.h): the same argument structs
// (kernels/args/loss.h) with host pointers, no stream.
#pragma once

#include "kernels/args/loss.h"

namespace engine::cpu {

void cross_entropy_forward(const CrossEntropyForwardArgs& args);
void cross_entropy_backward(const CrossEntropyBackwardArgs& args);
void soft_cross_entropy_forward(const SoftCrossEntropyForwardArgs& args);
void soft_cross_entropy_backward(const SoftCrossEntropyBackwardArgs& args);
void topk_correct(const TopkCorrectArgs& args);

}  // namespace engine::cpu
