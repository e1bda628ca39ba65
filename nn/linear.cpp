#include "nn/linear.h"

#include "kernels/ops/conv.h"
#include "nn/gradient_arena.h"
#include "nn/shape_checks.h"

namespace engine::nn {

Linear::Linear(ParameterSet& params, std::string name, int64_t in_features, int64_t out_features,
               bool bias)
    : Layer(std::move(name)),
      params_(params),
      in_features_(in_features),
      out_features_(out_features) {
  if (in_features < 1 || out_features < 1) fail_in(*this, "in and out features must be >= 1");
  weight_id_ = params.add_parameter(child_name(this->name(), "weight"), {out_features, in_features},
                                    ParameterKind::linear_weight);
  if (bias) {
    bias_id_ =
        params.add_parameter(child_name(this->name(), "bias"), {out_features}, ParameterKind::bias);
  }
}

Shape Linear::setup(const Shape& input, const SetupContext& context) {
  if (input.size() != 2 || input[0] < 1 || input[1] != in_features_) {
    fail_in(*this, "input shape " + shape_str(input) + ", expected [N, " +
                       std::to_string(in_features_) + "]");
  }
  const Shape out = {input[0], out_features_};
  setup_gradient_buffer(dx_, context, input, context.input_grad);
  if (!context.allocate) return out;
  weight_.setup(params_, weight_id_, context);
  weight_grad_ = params_.grad(weight_id_);
  if (bias_id_ >= 0) {
    bias_ = params_.value(bias_id_);
    bias_grad_ = params_.grad(bias_id_);
  }
  y_ = Tensor::empty(out, context.dtype, context.device);
  workspace_.setup(
      linear_backward_weight_workspace_numel(
          {.rows = input[0], .in_features = in_features_, .out_features = out_features_},
          context.device),
      context.scratch, context.device);
  return out;
}

const Tensor& Linear::forward(const Tensor& x, Pass& pass) {
  x_ = x;
  linear_forward({.x = x, .w = weight_.refresh(pass), .bias = bias_, .y = y_}, pass.stream);
  return y_;
}

const Tensor& Linear::backward(const Tensor& dy, Pass& pass) {
  linear_backward_weight({.x = x_,
                          .dy = dy,
                          .dw = weight_grad_,
                          .dbias = bias_grad_,
                          .workspace = workspace_.get(),
                          .write = pass.grad_write()},
                         pass.stream);
  if (bias_id_ >= 0) pass.grad_ready(bias_id_);
  pass.grad_ready(weight_id_);
  if (dx_.defined())
    linear_backward_data({.dy = dy, .w = weight_.current(), .dx = dx_}, pass.stream);
  return dx_;
}

}  // namespace engine::nn
