// The weight a layer computes with. For fp32 activations it is the fp32 master view itself;
// for bf16 activations (mixed precision: fp32 master weights, updated by the optimizer, and
// bf16 math on tensor cores or the CPU's bf16 path) it is a bf16 copy, cast from the master
// at each forward (or written by the optimizer's step: ComputeWeightCopy::flat()) and used
// again by that step's backward. Gradients stay fp32 either way.
//
// In a model the copies are views of one ComputeWeightCopy of the whole flat parameter buffer,
// cast in one launch by the first layer that refreshes its weight in a pass: each layer casting
// its own took 54 launches of a resnet50 step (a fifth of its memory-bound launches:
// bench/results/launch-census-resnet50-224px-b128-bf16-sim-device.txt). A layer set up alone
// keeps and casts its own copy.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"
#include "nn/layer.h"
#include "nn/parameters.h"

namespace engine::nn {

// A model's parameters (every value of its flat buffer, gaps included) in a compute dtype.
class ComputeWeightCopy {
 public:
  // Allocates the copy of `params` (allocated) in `dtype` on their device, unless it exists in
  // that dtype already.
  void prepare(const ParameterSet& params, DType dtype);
  bool prepared() const { return copy_.defined(); }
  DType dtype() const { return copy_.dtype(); }
  // Parameter `id`'s part of the copy, in its shape.
  Tensor view(ParameterId id) const;
  // Casts the whole buffer, unless this pass already did (or ran under a CUDA graph whose
  // capture did: the graph's replays cast again), or the optimizer wrote the copy with the
  // values as they still are (written_by_optimizer()).
  void refresh(const Pass& pass);

  // For an optimizer that writes the copy in its step (nn::Sgd::write_compute_copy): the whole
  // flat copy, and the mark it sets after writing it. Until the params' values are next taken
  // for writing (ParameterSet::flat_values(), whose version then moves on), refresh() casts
  // nothing: the CPU's bf16 step saves a pass over the fp32 master (about 3 ms of a resnet18
  // step at 32 px, batch 64, on Zen 4).
  Tensor& flat() { return copy_; }
  void written_by_optimizer() { written_at_version_ = params_->values_version(); }

 private:
  const ParameterSet* params_ = nullptr;
  Tensor copy_;
  uint64_t refreshed_in_pass_ = 0;  // Pass ids start at 1
  static constexpr uint64_t kNever = ~uint64_t{0};
  uint64_t written_at_version_ = kNever;
};

class ComputeWeight {
 public:
  // Parameter `id` of `params` as the master; where the activations' dtype is not f32, its
  // copy in that dtype: a view of the model's (context.weight_copy, when in that dtype), else
  // one of its own.
  void setup(const ParameterSet& params, ParameterId id, const SetupContext& context);
  // Brings the copy up to date with the master when there is one; returns what to compute
  // with.
  const Tensor& refresh(const Pass& pass);
  // What the last refresh() returned (the backward of the same step computes with it).
  const Tensor& current() const { return low_precision_.defined() ? low_precision_ : master_; }

 private:
  Tensor master_, low_precision_;
  ComputeWeightCopy* shared_ = nullptr;  // low_precision_ is a view of it
};

}  // namespace engine::nn
