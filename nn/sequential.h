// A chain of layers: forward in order, backward in reverse. The first layer is told that
// its input needs no gradient when the container's input needs none.
#pragma once

#include <memory>
#include <vector>

#include "nn/layer.h"

namespace engine::nn {

class Sequential : public Layer {
 public:
  explicit Sequential(std::string name) : Layer(std::move(name)) {}
  std::string_view type() const override { return "Sequential"; }

  // Takes ownership; returns the layer for configuration.
  template <typename L>
  L& add(std::unique_ptr<L> layer) {
    L& ref = *layer;
    layers_.push_back(std::move(layer));
    return ref;
  }

  Shape setup(const Shape& input, const SetupContext& context) override;
  const Tensor& forward(const Tensor& x, Pass& pass) override;
  const Tensor& backward(const Tensor& dy, Pass& pass) override;
  void for_each_child(const std::function<void(Layer&)>& fn) override;

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
};

}  // namespace engine::nn
