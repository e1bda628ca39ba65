// The batchnorm family: reduction phases (batchnorm_reduce.cuh), the fp64 sums and their
// finalization (batchnorm_sums.cuh), element-wise phases (batchnorm_apply.cuh), each defining
// its entry points with an explicit launch geometry; here, those of batchnorm.h, which launch
// with the default geometry.
#pragma once

#include "kernels/cuda/batchnorm.h"
#include "kernels/cuda/batchnorm_apply.cuh"
#include "kernels/cuda/batchnorm_reduce.cuh"
#include "kernels/cuda/batchnorm_sums.cuh"

namespace engine::cuda {

int64_t batchnorm_workspace_numel(int64_t rows, int64_t channels) {
  return batchnorm_workspace_numel(rows, channels, ChannelReduceLaunch{});
}
void batchnorm_stats(const BatchNormStatsArgs& args, cudaStream_t stream) {
  batchnorm_stats(args, stream, ChannelReduceLaunch{});
}
void batchnorm_stats_to_sums(const BatchNormStatsToSumsArgs& args, cudaStream_t stream) {
  batchnorm_stats_to_sums(args, stream, PerChannelLaunch{});
}
void batchnorm_finalize_sums(const BatchNormFinalizeSumsArgs& args, cudaStream_t stream) {
  batchnorm_finalize_sums(args, stream, PerChannelLaunch{});
}
void batchnorm_normalize(const BatchNormNormalizeArgs& args, cudaStream_t stream) {
  batchnorm_normalize(args, stream, ChannelTileLaunch{});
}
void batchnorm_eval_forward(const BatchNormEvalForwardArgs& args, cudaStream_t stream) {
  batchnorm_eval_forward(args, stream, ChannelTileLaunch{});
}
void batchnorm_backward_reduce(const BatchNormBackwardReduceArgs& args, cudaStream_t stream) {
  batchnorm_backward_reduce(args, stream, ChannelReduceLaunch{});
}
void batchnorm_backward_elementwise(const BatchNormBackwardElementwiseArgs& args,
                                    cudaStream_t stream) {
  batchnorm_backward_elementwise(args, stream, ChannelTileLaunch{});
}

}  // namespace engine::cuda
