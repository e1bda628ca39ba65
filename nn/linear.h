// torch.nn.Linear: y = x w^T + b on x [N, in_features], w [out_features, in_features] (the
// same layout as PyTorch), b [out_features].
#pragma once

#include "nn/compute_weight.h"
#include "nn/layer.h"

namespace engine::nn {

class Linear final : public Layer {
 public:
  Linear(ParameterSet& params, std::string name, int64_t in_features, int64_t out_features,
         bool bias = true);
  std::string_view type() const override { return "Linear"; }
  Shape setup(const Shape& input, const SetupContext& context) override;
  const Tensor& forward(const Tensor& x, Pass& pass) override;
  const Tensor& backward(const Tensor& dy, Pass& pass) override;

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  ParameterId weight_id() const { return weight_id_; }
  ParameterId bias_id() const { return bias_id_; }

 private:
  ParameterSet& params_;
  int64_t in_features_, out_features_;
  ParameterId weight_id_ = -1, bias_id_ = -1;
  ComputeWeight weight_;  // the fp32 master, or its bf16 copy for bf16 activations
  Tensor weight_grad_, bias_, bias_grad_;
  Tensor x_, y_, dx_;
  LayerScratch workspace_;
};

}  // namespace engine::nn
