// The weight a layer computes with. For fp32 activations it is the fp32 master view itself;
// for bf16 activations (mixed precision: fp32 master weights, updated by the optimizer, and
// bf16 math on tensor cores or the CPU's bf16 path) it is a bf16 copy, cast from the master
// at each forward and used again by that step's backward. Gradients stay fp32 either way.
#pragma once

#include "kernels/ops/copy.h"
#include "kernels/tensor.h"

namespace engine::nn {

class ComputeWeight {
 public:
  void setup(const Tensor& master, DType activation_dtype, Device device) {
    master_ = master;
    low_precision_ = activation_dtype == DType::f32
                         ? Tensor()
                         : Tensor::empty(master.shape(), activation_dtype, device);
  }
  // Casts the master into the bf16 copy when there is one; returns what to compute with.
  const Tensor& refresh(Stream& stream) {
    if (!low_precision_.defined()) return master_;
    cast(master_, low_precision_, stream);
    return low_precision_;
  }
  // What the last refresh() returned (the backward of the same step computes with it).
  const Tensor& current() const { return low_precision_.defined() ? low_precision_ : master_; }

 private:
  Tensor master_, low_precision_;
};

}  // namespace engine::nn
