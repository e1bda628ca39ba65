#include "nn/parameter_runs.h"

#include <algorithm>

#include "kernels/ops/copy.h"
#include "kernels/ops/optim.h"

namespace engine::nn {
namespace {

std::vector<const ParameterInfo*> by_offset(const ParameterSet& parameters) {
  std::vector<const ParameterInfo*> sorted;
  for (const ParameterInfo& p : parameters.parameters())
    sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(),
            [](const ParameterInfo* a, const ParameterInfo* b) { return a->offset < b->offset; });
  return sorted;
}

}  // namespace

std::vector<DecayRun> decay_runs(const ParameterSet& parameters, float weight_decay,
                                 bool decay_norm_and_bias) {
  const int64_t total = parameters.flat_values().numel();
  if (weight_decay == 0.f || decay_norm_and_bias) return {{0, total, true}};
  const std::vector<const ParameterInfo*> sorted = by_offset(parameters);
  std::vector<DecayRun> runs;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const int64_t begin = i == 0 ? 0 : sorted[i]->offset;
    const int64_t end = i + 1 < sorted.size() ? sorted[i + 1]->offset : total;
    const bool decay = !is_norm_or_bias(sorted[i]->kind);
    if (!runs.empty() && runs.back().weight_decay == decay) {
      runs.back().numel = end - runs.back().offset;
    } else {
      runs.push_back({begin, end - begin, decay});
    }
  }
  return runs;
}

Tensor parameter_segments(const ParameterSet& parameters, SegmentAdapt adapt, Stream& stream) {
  const int64_t total = parameters.flat_values().numel();
  const std::vector<const ParameterInfo*> sorted = by_offset(parameters);
  std::vector<int32_t> table;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const int64_t begin = i == 0 ? 0 : sorted[i]->offset;
    const int64_t end = i + 1 < sorted.size() ? sorted[i + 1]->offset : total;
    const bool adapted = adapt == SegmentAdapt::all ||
                         (adapt == SegmentAdapt::weights && !is_norm_or_bias(sorted[i]->kind));
    table.insert(table.end(), {static_cast<int32_t>(begin), static_cast<int32_t>(end),
                               adapted ? kSegmentAdapt : 0});
  }
  const Shape shape{static_cast<int64_t>(sorted.size()), kSegmentFields};
  Tensor device_table = Tensor::empty(shape, DType::i32, parameters.device());
  copy(Tensor::from_ints(shape, table), device_table, stream);
  stream.synchronize();  // the host table dies here
  return device_table;
}

int sum_squares_blocks(int64_t largest_segment) {
  constexpr int64_t kElementsPerBlock = 64 * 1024;
  return static_cast<int>(
      std::clamp<int64_t>((largest_segment + kElementsPerBlock - 1) / kElementsPerBlock, 1, 1024));
}

}  // namespace engine::nn
