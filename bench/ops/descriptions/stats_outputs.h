// What the convolutions with BatchNorm statistics (conv_stats.cpp, conv_bn_input.cpp) report.
#pragma once

#include <vector>

#include "bench/ops/op_case.h"

namespace engine::op_registry {

// y and its statistics (f32[2C+1]: mean, m2, count) as outputs of their own scale: the means
// against 1 (y is O(1): filters scaled by 1 / sqrt(K)), the variances m2 / count relative to
// theirs, the count exactly.
std::vector<Output> stats_outputs(const Tensor& y, const Tensor& stats, int64_t channels,
                                  Stream& stream);

}  // namespace engine::op_registry
