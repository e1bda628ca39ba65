// CPU twins of the CUDA pooling entry points (kernels/cuda/pool.h): the same argument structs
// (kernels/args/pool.h) with host pointers, no stream.
#pragma once

#include "kernels/args/pool.h"

namespace engine::cpu {

void maxpool2d_forward(const MaxPool2dForwardArgs& args);
void maxpool2d_backward(const MaxPool2dBackwardArgs& args);
void global_avgpool_forward(const GlobalAvgPoolForwardArgs& args);
void global_avgpool_backward(const GlobalAvgPoolBackwardArgs& args);

}  // namespace engine::cpu
