// The parameter-free layers: ReLU, MaxPool2d and AdaptiveAvgPool2d(1) (+ flatten).
#pragma once

#include "kernels/ops/pool.h"
#include "nn/layer.h"

namespace engine::nn {

// torch.nn.ReLU. (ResNet blocks use BatchNorm2d's fused ReLU instead.)
class ReLU final : public Layer {
 public:
  explicit ReLU(std::string name) : Layer(std::move(name)) {}
  std::string_view type() const override { return "ReLU"; }
  Shape setup(const Shape& input, const SetupContext& context) override;
  const Tensor& forward(const Tensor& x, Pass& pass) override;
  const Tensor& backward(const Tensor& dy, Pass& pass) override;

 private:
  Tensor y_, dx_;
};

// torch.nn.MaxPool2d(kernel, stride, padding), as the ResNet stem's (3, 2, 1).
class MaxPool2d final : public Layer {
 public:
  MaxPool2d(std::string name, const MaxPool2dParams& params);
  std::string_view type() const override { return "MaxPool2d"; }
  Shape setup(const Shape& input, const SetupContext& context) override;
  const Tensor& forward(const Tensor& x, Pass& pass) override;
  const Tensor& backward(const Tensor& dy, Pass& pass) override;

 private:
  MaxPool2dParams params_;
  Tensor y_, argmax_, dx_;
};

// torch.nn.AdaptiveAvgPool2d(1) followed by torch.flatten(x, 1): [N, H, W, C] -> [N, C].
class GlobalAvgPool final : public Layer {
 public:
  explicit GlobalAvgPool(std::string name) : Layer(std::move(name)) {}
  std::string_view type() const override { return "AdaptiveAvgPool2d"; }
  Shape setup(const Shape& input, const SetupContext& context) override;
  const Tensor& forward(const Tensor& x, Pass& pass) override;
  const Tensor& backward(const Tensor& dy, Pass& pass) override;

 private:
  Tensor y_, dx_;
};

}  // namespace engine::nn
