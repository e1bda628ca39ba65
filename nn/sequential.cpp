#include "nn/sequential.h"

#include "nn/shape_checks.h"

namespace engine::nn {

Shape Sequential::setup(const Shape& input, const SetupContext& context) {
  if (layers_.empty()) fail_in(*this, "has no layers");
  Shape shape = input;
  SetupContext inner = context;
  for (auto& layer : layers_) {
    shape = layer->setup(shape, inner);
    inner.input_grad = true;
  }
  return shape;
}

const Tensor& Sequential::forward(const Tensor& x, Pass& pass) {
  const Tensor* y = &x;
  for (auto& layer : layers_)
    y = &layer->forward(*y, pass);
  return *y;
}

const Tensor& Sequential::backward(const Tensor& dy, Pass& pass) {
  const Tensor* g = &dy;
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it)
    g = &(*it)->backward(*g, pass);
  return *g;
}

void Sequential::for_each_child(const std::function<void(Layer&)>& fn) {
  for (auto& layer : layers_)
    fn(*layer);
}

}  // namespace engine::nn
