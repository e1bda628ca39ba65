// CPU twins of the CUDA batchnorm entry points (kernels/cuda/batchnorm.h): the same argument
// structs (kernels/args/batchnorm.h) without the stream; the CPU ignores the workspace (it
// keeps its partial sums on the heap).
#pragma once

#include "kernels/args/batchnorm.h"

namespace engine::cpu {

void batchnorm_stats(const BatchNormStatsArgs& args);
void batchnorm_stats_to_sums(const BatchNormStatsToSumsArgs& args);  // kernels/batchnorm_sums.h
void batchnorm_finalize_sums(const BatchNormFinalizeSumsArgs& args);
void batchnorm_normalize(const BatchNormNormalizeArgs& args);
void batchnorm_eval_forward(const BatchNormEvalForwardArgs& args);
void batchnorm_backward_reduce(const BatchNormBackwardReduceArgs& args);
void batchnorm_backward_elementwise(const BatchNormBackwardElementwiseArgs& args);

}  // namespace engine::cpu
