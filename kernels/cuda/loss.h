// CUDA entry points of the loss family (defined in loss.cuh, compiled by loss.cu). The CPU
// twins (kernels/cpu/loss.h) take the same arguments minus the stream.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/dtype.h"

namespace engine::cuda {

void cross_entropy_forward(DType dtype, const void* logits, const int32_t* labels, int64_t n,
                           int64_t k, float label_smoothing, float* sample_loss, float* loss,
                           cudaStream_t stream);
void cross_entropy_backward(DType dtype, const void* logits, const int32_t* labels, int64_t n,
                            int64_t k, float label_smoothing, float grad_loss, void* dlogits,
                            cudaStream_t stream);
void topk_correct(DType dtype, const void* logits, const int32_t* labels, int64_t n, int64_t k,
                  float* correct, cudaStream_t stream);

}  // namespace engine::cuda
