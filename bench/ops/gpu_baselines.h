// The GPU baselines a description may name for its bench rows (op_description.h's
// GpuBaseline), besides the device copy every memory-bound op is held against.
#pragma once

#include "bench/ops/op_description.h"

namespace engine::op_registry {

// cuDNN's unfused add then ReLU (cudnnOpTensor, cudnnActivationForward) over the case's
// elements, in f32.
extern const GpuBaseline kCudnnAddReluBaseline;
// cuBLAS's GEMMs of the fc layer (dims: rows in out) in the case's dtype: y = x w^T + b,
// dx = dy w, and dw = dy^T x with db = the column sums of dy.
extern const GpuBaseline kCublasLinearForward;
extern const GpuBaseline kCublasLinearBackwardData;
extern const GpuBaseline kCublasLinearBackwardWeight;
// cuDNN's convolution passes (dims: batch in_h in_w in_channels out_channels kernel_h kernel_w
// stride pad) in the case's dtype, each with the algorithm cuDNN's timed search picks for it,
// named in the row's note.
extern const GpuBaseline kCudnnConvForward;
extern const GpuBaseline kCudnnConvBackwardData;
extern const GpuBaseline kCudnnConvBackwardFilter;

}  // namespace engine::op_registry
