#include "nn/compute_weight.h"

#include "kernels/ops/copy.h"

namespace engine::nn {

void ComputeWeightCopy::prepare(const ParameterSet& params, DType dtype) {
  if (params_ == &params && copy_.defined() && copy_.dtype() == dtype) return;
  params_ = &params;
  copy_ = Tensor::empty(params.flat_values().shape(), dtype, params.device());
  refreshed_in_pass_ = 0;
}

Tensor ComputeWeightCopy::view(ParameterId id) const {
  const ParameterInfo& p = params_->info(id);
  return copy_.view(p.offset, p.shape);
}

void ComputeWeightCopy::refresh(const Pass& pass) {
  if (refreshed_in_pass_ == pass.id) return;
  cast(params_->flat_values(), copy_, pass.stream);
  refreshed_in_pass_ = pass.id;
}

void ComputeWeight::setup(const Tensor& master, DType activation_dtype, Device device) {
  master_ = master;
  shared_ = nullptr;
  low_precision_ = activation_dtype == DType::f32
                       ? Tensor()
                       : Tensor::empty(master.shape(), activation_dtype, device);
}

void ComputeWeight::setup(const Tensor& master, ComputeWeightCopy& copy, ParameterId id) {
  master_ = master;
  shared_ = &copy;
  low_precision_ = copy.view(id);
}

const Tensor& ComputeWeight::refresh(const Pass& pass) {
  if (!low_precision_.defined()) return master_;
  if (shared_ != nullptr) {
    shared_->refresh(pass);
  } else {
    cast(master_, low_precision_, pass.stream);
  }
  return low_precision_;
}

}  // namespace engine::nn
