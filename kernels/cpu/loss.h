// CPU twins of the CUDA loss entry points (kernels/cuda/loss.h): same arguments, host
// pointers, no stream. logits [n, k] of dtype; labels [n] i32 class indices (see
// kernels/ops/loss.h).
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace engine::cpu {

void cross_entropy_forward(DType dtype, const void* logits, const int32_t* labels, int64_t n,
                           int64_t k, float label_smoothing, float* sample_loss, float* loss);
void cross_entropy_backward(DType dtype, const void* logits, const int32_t* labels, int64_t n,
                            int64_t k, float label_smoothing, float grad_loss, void* dlogits);
// correct[0] = top-1 count, correct[1] = top-5 count.
void topk_correct(DType dtype, const void* logits, const int32_t* labels, int64_t n, int64_t k,
                  float* correct);

}  // namespace engine::cpu
