// CUDA entry points of the batchnorm family (defined in batchnorm.cuh, compiled by
// batchnorm.cu): the argument structs of kernels/args/batchnorm.h with device pointers, and
// the stream. The CPU twins (kernels/cpu/batchnorm.h) take the same structs.
#pragma once

#include <cstdint>

#include "kernels/args/batchnorm.h"
#include "kernels/cuda/cuda_runtime.h"

namespace engine::cuda {

// f32 elements of scratch batchnorm_stats and batchnorm_backward_reduce need: their
// per-block partial results, merged in a fixed order by the last block of each channel tile,
// and that tile's arrival counter. Zero it before its first use; the kernels leave it so.
int64_t batchnorm_workspace_numel(int64_t rows, int64_t channels);

void batchnorm_stats(const BatchNormStatsArgs& args, cudaStream_t stream);
void batchnorm_stats_to_sums(const BatchNormStatsToSumsArgs& args, cudaStream_t stream);
void batchnorm_finalize_sums(const BatchNormFinalizeSumsArgs& args, cudaStream_t stream);
void batchnorm_normalize(const BatchNormNormalizeArgs& args, cudaStream_t stream);
void batchnorm_eval_forward(const BatchNormEvalForwardArgs& args, cudaStream_t stream);
void batchnorm_backward_reduce(const BatchNormBackwardReduceArgs& args, cudaStream_t stream);
void batchnorm_backward_elementwise(const BatchNormBackwardElementwiseArgs& args,
                                    cudaStream_t stream);

}  // namespace engine::cuda
