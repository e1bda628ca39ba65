// CPU twins of the CUDA activation entry points (kernels/cuda/activation.h): the same argument
// structs (kernels/args/activation.h) with host pointers, no stream.
#pragma once

#include "kernels/args/activation.h"

namespace engine::cpu {

void relu_forward(const ReluForwardArgs& args);
void relu_backward(const ReluBackwardArgs& args);
void add(const AddArgs& args);

}  // namespace engine::cpu
