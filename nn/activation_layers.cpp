#include "nn/activation_layers.h"

#include "kernels/ops/activation.h"
#include "nn/gradient_arena.h"
#include "nn/shape_checks.h"

namespace engine::nn {

Shape ReLU::setup(const Shape& input, const SetupContext& context) {
  if (input.empty() || shape_numel(input) < 1) {
    fail_in(*this, "input shape " + shape_str(input) + " is empty");
  }
  setup_gradient_buffer(dx_, context, input, context.input_grad);
  if (!context.allocate) return input;
  y_ = Tensor::empty(input, context.dtype, context.device);
  return input;
}

const Tensor& ReLU::forward(const Tensor& x, Pass& pass) {
  relu_forward(x, y_, pass.stream);
  return y_;
}

const Tensor& ReLU::backward(const Tensor& dy, Pass& pass) {
  if (dx_.defined()) relu_backward({.y = y_, .dy = dy, .dx = dx_}, pass.stream);
  return dx_;
}

MaxPool2d::MaxPool2d(std::string name, const MaxPool2dParams& params)
    : Layer(std::move(name)), params_(params) {}

Shape MaxPool2d::setup(const Shape& input, const SetupContext& context) {
  require_nhwc(*this, input, -1);
  const Shape out = {input[0], params_.output_size(input[1]), params_.output_size(input[2]),
                     input[3]};
  if (out[1] < 1 || out[2] < 1) {
    fail_in(*this, "the " + std::to_string(params_.kernel) + "x" + std::to_string(params_.kernel) +
                       " window does not fit the input " + shape_str(input));
  }
  setup_gradient_buffer(dx_, context, input, context.input_grad);
  if (!context.allocate) return out;
  y_ = Tensor::empty(out, context.dtype, context.device);
  argmax_ = Tensor::empty(out, DType::u8, context.device);
  return out;
}

const Tensor& MaxPool2d::forward(const Tensor& x, Pass& pass) {
  maxpool2d_forward(params_, {.x = x, .y = y_, .argmax = argmax_}, pass.stream);
  return y_;
}

const Tensor& MaxPool2d::backward(const Tensor& dy, Pass& pass) {
  if (dx_.defined())
    maxpool2d_backward(params_, {.dy = dy, .argmax = argmax_, .dx = dx_}, pass.stream);
  return dx_;
}

Shape GlobalAvgPool::setup(const Shape& input, const SetupContext& context) {
  require_nhwc(*this, input, -1);
  const Shape out = {input[0], input[3]};
  setup_gradient_buffer(dx_, context, input, context.input_grad);
  if (!context.allocate) return out;
  y_ = Tensor::empty(out, context.dtype, context.device);
  return out;
}

const Tensor& GlobalAvgPool::forward(const Tensor& x, Pass& pass) {
  global_avgpool_forward(x, y_, pass.stream);
  return y_;
}

const Tensor& GlobalAvgPool::backward(const Tensor& dy, Pass& pass) {
  if (dx_.defined()) global_avgpool_backward(dy, dx_, pass.stream);
  return dx_;
}

}  // namespace engine::nn
