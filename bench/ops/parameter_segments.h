// A ResNet's parameter tensors as the segment table of kernels/ops/optim.h, for the per-tensor
// optimizer ops' cases (sum_squares, lars): per conv layer its filters (adapted by LARS) and
// its BatchNorm's weight and bias (excluded), in network order; the fc layer is left out.
// layers > 0 keeps the first `layers` conv layers only (a case small enough for the sim
// device).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench/ops/model_shapes.h"
#include "kernels/ops/optim.h"

namespace engine::op_registry {

inline std::vector<int32_t> parameter_segment_rows(const ModelShapes& model, int layers = 0) {
  std::vector<int32_t> rows;
  int32_t begin = 0;
  const auto add = [&](int64_t numel, int32_t flags) {
    rows.insert(rows.end(), {begin, begin + static_cast<int32_t>(numel), flags});
    begin += static_cast<int32_t>(numel);
  };
  for (const bench::ConvLayer& layer : model.conv_layers) {
    for (int i = 0; i < layer.count; ++i) {
      if (layers > 0 && static_cast<int>(rows.size()) >= 3 * kSegmentFields * layers) return rows;
      add(shape_numel(layer.shape.filter_shape()), kSegmentAdapt);
      add(layer.shape.out_channels, 0);  // BatchNorm weight
      add(layer.shape.out_channels, 0);  // BatchNorm bias
    }
  }
  return rows;
}

// The most elements one row of a segment table spans (what nn::sum_squares_blocks sizes by).
inline int64_t largest_segment(const std::vector<int32_t>& rows) {
  int64_t largest = 0;
  for (size_t row = 0; row + kSegmentFields <= rows.size(); row += kSegmentFields)
    largest = std::max<int64_t>(largest, rows[row + 1] - rows[row]);
  return largest;
}

}  // namespace engine::op_registry
