// The finalize's kernel arguments from an op's tensors, checked: shared by
// batchnorm_finalize_sums and the statistics' merges that finish it in their own launch
// (batchnorm_stats, conv2d_forward's fused statistics). Internal to kernels/ops.
#pragma once

#include <cstdint>

#include "kernels/args/batchnorm.h"
#include "kernels/ops/batchnorm.h"
#include "kernels/ops/checks.h"

namespace engine::ops {

// The finalize's tensors, as BatchNormStatsFusion and BatchNormFinalizeSumsOperands name them.
struct FinalizeTensors {
  Tensor batch_stats;  // undefined: no finalize
  Tensor running_mean, running_var;
  BatchNormConstants constants;
  BatchNormConvInput conv_input;
};

// The arguments for `channels` channels reading `sums`, every tensor checked to be on `device`;
// all null where batch_stats is undefined (conv_input must then be too).
BatchNormFinalizeSumsArgs finalize_args(OpName op, const double* sums, int64_t channels,
                                        Device device, FinalizeTensors tensors);

}  // namespace engine::ops
