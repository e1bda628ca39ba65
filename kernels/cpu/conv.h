// CPU twins of the CUDA conv2d entry points (kernels/cuda/conv.h): im2col + sgemm over chunks
// of output rows, NHWC/KRSC throughout, on the argument structs of kernels/args/conv.h with
// host pointers. bf16 tensors are widened to fp32, computed in fp32 and rounded once on output.
#pragma once

#include "kernels/args/conv.h"

namespace engine::cpu {

void conv2d_forward(const Conv2dForwardArgs& args);
void conv2d_backward_data(const Conv2dBackwardDataArgs& args);
void conv2d_backward_filter(const Conv2dBackwardFilterArgs& args);
void conv_input_from_batchnorm(const ConvInputFromBatchNormArgs& args);

}  // namespace engine::cpu
