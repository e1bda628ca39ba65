// torch.nn.BatchNorm2d on NHWC activations, with the fusions a ResNet needs: an optional
// ReLU after it and an optional residual added before that ReLU (y = relu(bn(x) + residual)).
//
// Training uses the batch statistics and updates the running ones as PyTorch does
// (momentum 0.1, unbiased variance); evaluation uses the running statistics. Parameters:
// "<name>.weight", "<name>.bias"; buffers "<name>.running_mean", "<name>.running_var"
// (running_var starts at 1) and the counter "<name>.num_batches_tracked".
#pragma once

#include "nn/layer.h"

namespace engine::nn {

struct BatchNormOptions {
  int64_t channels = 1;
  float eps = 1e-5f;
  float momentum = 0.1f;
  bool relu = false;  // max(., 0) after the (optional) residual add
};

class BatchNorm2d final : public Layer {
 public:
  BatchNorm2d(ParameterSet& params, std::string name, const BatchNormOptions& options);
  std::string_view type() const override { return "BatchNorm2d"; }

  Shape setup(const Shape& input, const SetupContext& context) override;
  const Tensor& forward(const Tensor& x, Pass& pass) override;
  // y = act(bn(x) + residual); residual has x's shape.
  const Tensor& forward(const Tensor& x, const Tensor& residual, Pass& pass);
  const Tensor& backward(const Tensor& dy, Pass& pass) override;
  // After backward: the gradient at the residual input (dy through the ReLU), which the
  // residual's branch continues with. It is the layer's tensor (or dy itself without ReLU).
  const Tensor& residual_grad() const { return pre_activation_grad_; }

  const BatchNormOptions& options() const { return options_; }
  ParameterId weight_id() const { return weight_id_; }
  ParameterId bias_id() const { return bias_id_; }
  // Once allocated: the running statistics and PyTorch's num_batches_tracked.
  Tensor running_mean() const;
  Tensor running_var() const;
  int64_t batches_tracked() const;
  // Called by the model right after allocate(): running_var = 1, weight = 1 (bias = 0).
  void reset_state(Stream& stream);

 private:
  const Tensor& run_forward(const Tensor& x, const Tensor& residual, Pass& pass);

  ParameterSet& params_;
  BatchNormOptions options_;
  ParameterId weight_id_ = -1, bias_id_ = -1;
  BufferId mean_id_ = -1, var_id_ = -1;
  CounterId batches_id_ = -1;
  Shape input_shape_;
  Tensor weight_, bias_, weight_grad_, bias_grad_, running_mean_, running_var_;
  Tensor stats_, batch_stats_, grad_sums_, workspace_;
  Tensor x_, y_, dx_, relu_grad_, pre_activation_grad_;
  bool trained_forward_ = false;  // the last forward used batch statistics
};

}  // namespace engine::nn
