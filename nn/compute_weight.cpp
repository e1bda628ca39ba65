#include "nn/compute_weight.h"

#include "kernels/ops/copy.h"

namespace engine::nn {

void ComputeWeightCopy::prepare(const ParameterSet& params, DType dtype) {
  if (params_ == &params && copy_.defined() && copy_.dtype() == dtype) return;
  params_ = &params;
  copy_ = Tensor::empty(params.flat_values().shape(), dtype, params.device());
  refreshed_in_pass_ = 0;
  written_at_version_ = kNever;
}

Tensor ComputeWeightCopy::view(ParameterId id) const {
  const ParameterInfo& p = params_->info(id);
  return copy_.view(p.offset, p.shape);
}

void ComputeWeightCopy::refresh(const Pass& pass) {
  if (refreshed_in_pass_ == pass.id) return;
  if (written_at_version_ != params_->values_version()) {
    cast(params_->flat_values(), copy_, pass.stream);
  }
  refreshed_in_pass_ = pass.id;
}

void ComputeWeight::setup(const ParameterSet& params, ParameterId id, const SetupContext& context) {
  master_ = params.value(id);
  shared_ = nullptr;
  low_precision_ = Tensor();
  if (context.dtype == DType::f32) return;
  if (context.weight_copy != nullptr && context.weight_copy->dtype() == context.dtype) {
    shared_ = context.weight_copy;
    low_precision_ = shared_->view(id);
  } else {
    low_precision_ = Tensor::empty(master_.shape(), context.dtype, context.device);
  }
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
