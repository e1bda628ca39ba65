#include "nn/conv2d.h"

#include <algorithm>

#include "kernels/conv_plans.h"
#include "kernels/ops/activation.h"
#include "kernels/ops/conv.h"
#include "nn/gradient_arena.h"
#include "nn/shape_checks.h"

namespace engine::nn {

Conv2d::Conv2d(ParameterSet& params, std::string name, const Conv2dOptions& options)
    : Layer(std::move(name)), params_(params), options_(options) {
  if (options.in_channels < 1 || options.out_channels < 1 || options.kernel < 1 ||
      options.stride < 1 || options.padding < 0) {
    fail_in(*this, "in/out channels, kernel and stride must be >= 1 and padding >= 0");
  }
  weight_id_ = params.add_parameter(
      child_name(this->name(), "weight"),
      {options.out_channels, options.kernel, options.kernel, options.in_channels},
      ParameterKind::conv_filter);
  if (options.bias) {
    bias_id_ = params.add_parameter(child_name(this->name(), "bias"), {options.out_channels},
                                    ParameterKind::bias);
  }
}

Shape Conv2d::setup(const Shape& input, const SetupContext& context) {
  require_nhwc(*this, input, options_.in_channels);
  shape_ = make_conv2d_shape(input[0], input[1], options_.in_channels, options_.out_channels,
                             options_.kernel, options_.stride, options_.padding);
  shape_.in_w = input[2];
  shape_.validate();
  input_grad_ = context.input_grad;
  setup_gradient_buffer(dx_, context, input, context.input_grad);
  if (!context.allocate) return shape_.output_shape();
  weight_.setup(params_, weight_id_, context);
  weight_grad_ = params_.grad(weight_id_);
  if (bias_id_ >= 0) {
    bias_ = params_.value(bias_id_);
    bias_grad_ = params_.grad(bias_id_);
  }
  y_ = Tensor::empty(shape_.output_shape(), context.dtype, context.device);
  // For the passes as the last wiring left them: feed_batchnorm_stats and read_input_through
  // choose again for theirs.
  choose_algos(context);
  return shape_.output_shape();
}

ConvFusion Conv2d::fusion_of(ConvPass pass) const {
  switch (pass) {
    case ConvPass::forward:
      if (input_from_ != nullptr && stats_for_ != nullptr)
        return ConvFusion::input_affine_output_stats;
      if (stats_for_ != nullptr) return ConvFusion::output_stats;
      break;
    case ConvPass::backward_data:
      if (data_grad_reduces_ == nullptr) return ConvFusion::none;
      return data_grad_reduces_ == gate_from_ ? ConvFusion::residual_batchnorm_backward
                                              : ConvFusion::batchnorm_backward;
    case ConvPass::backward_filter:
      break;
  }
  return input_from_ != nullptr ? ConvFusion::input_affine : ConvFusion::none;
}

void Conv2d::choose_algos(const SetupContext& context) {
  const auto algo = [&](ConvPass pass) {
    return context.conv_plans == nullptr
               ? ConvAlgo{}
               : context.conv_plans->algo_for(
                     {shape_, pass, context.dtype, context.stream.fp32_math(), fusion_of(pass)});
  };
  forward_algo_ = algo(ConvPass::forward);
  backward_data_algo_ = algo(ConvPass::backward_data);
  backward_filter_algo_ = algo(ConvPass::backward_filter);
  // One scratch for the three passes, which run one after another on the layer's stream.
  const int64_t scratch = std::max(
      {conv2d_forward_workspace_numel(shape_, context.device, forward_algo_),
       conv2d_backward_data_workspace_numel(shape_, context.device, backward_data_algo_),
       conv2d_backward_filter_workspace_numel(shape_, context.device, backward_filter_algo_)});
  workspace_.setup(scratch, context.scratch, context.device);
  const int64_t counters = std::max(
      {conv2d_split_counters_numel(shape_, ConvPass::forward, context.device, forward_algo_),
       conv2d_split_counters_numel(shape_, ConvPass::backward_data, context.device,
                                   backward_data_algo_),
       conv2d_split_counters_numel(shape_, ConvPass::backward_filter, context.device,
                                   backward_filter_algo_)});
  split_counters_ = counters == 0
                        ? Tensor()
                        : Tensor::zeros({counters}, DType::i32, context.device, context.stream);
}

void Conv2d::feed_batchnorm_stats(BatchNorm2d* bn, const SetupContext& context) {
  // Decided in a setup that allocates nothing too: problems() then names the fused forward.
  const bool fits =
      bn != nullptr && context.fusion != BatchNormFusion::none && !context.device.is_cpu();
  stats_for_ = fits ? bn : nullptr;
  stats_workspace_ = Tensor();
  if (!context.allocate) return;
  choose_algos(context);
  if (!fits) return;
  // Its own and zeroed: it holds counters that every forward leaves at zero, which a scratch
  // shared with other layers would not keep.
  stats_workspace_ =
      Tensor::zeros({conv2d_forward_stats_workspace_numel(shape_, context.device, forward_algo_)},
                    DType::f32, context.device, context.stream);
}

void Conv2d::read_input_through(BatchNorm2d* bn, const SetupContext& context) {
  if (input_from_ != nullptr) input_from_->defer_apply(false, context);
  input_from_ = nullptr;
  // The filter gradient's transformed loads write f32 (the master weights' gradient), as
  // every ParameterSet's gradients are; a setup that allocates nothing decides the same.
  const bool fits = bn != nullptr && context.fusion >= BatchNormFusion::apply &&
                    !context.device.is_cpu() &&
                    (!context.allocate || weight_grad_.dtype() == DType::f32) && bn->options().relu;
  if (fits) {
    if (gate_from_ != nullptr) fail_in(*this, "read_input_through after gate_input_grad_by");
    input_from_ = bn;
    bn->defer_apply(true, context);
  }
  wire_data_grad(context);
}

void Conv2d::gate_input_grad_by(BatchNorm2d* bn, const SetupContext& context) {
  if (gate_from_ != nullptr) gate_from_->reduce_in_next_conv(false, context);
  gate_from_ = nullptr;
  const bool fits = bn != nullptr &&
                    batchnorm_fusion_crosses_blocks(context.fusion, context.device.is_cpu()) &&
                    input_grad_ && bn->options().relu;
  if (fits) {
    if (input_from_ != nullptr) fail_in(*this, "gate_input_grad_by after read_input_through");
    gate_from_ = bn;
    bn->reduce_in_next_conv(true, context);
  }
  wire_data_grad(context);
}

void Conv2d::wire_data_grad(const SetupContext& context) {
  data_grad_reduces_ = nullptr;
  data_grad_workspace_ = Tensor();
  if (context.fusion >= BatchNormFusion::block && input_grad_)
    data_grad_reduces_ = input_from_ != nullptr ? input_from_ : gate_from_;
  if (!context.allocate) return;
  choose_algos(context);
  if (data_grad_reduces_ != nullptr) {
    // Its own and zeroed, as the forward's statistics workspace (counters).
    data_grad_workspace_ = Tensor::zeros(
        {conv2d_backward_data_bn_workspace_numel(shape_, context.device, backward_data_algo_)},
        DType::f32, context.device, context.stream);
  }
}

const Tensor& Conv2d::forward(const Tensor& x, Pass& pass) {
  x_ = x;
  // x is the BatchNorm's input where it defers.
  input_ = input_from_ != nullptr && input_from_->deferred() ? input_from_->deferred_input()
                                                             : ConvInputAffine{};
  if (stats_for_ != nullptr && pass.training) {
    Conv2dForwardFusion fusion = stats_for_->stats_fusion();
    fusion.input = input_;
    conv2d_forward(
        shape_,
        {.x = x, .w = weight_.refresh(pass), .bias = bias_, .y = y_, .workspace = stats_workspace_},
        pass.stream, forward_algo_, fusion);
    return y_;
  }
  conv2d_forward(shape_,
                 {.x = x,
                  .w = weight_.refresh(pass),
                  .bias = bias_,
                  .y = y_,
                  .workspace = workspace_.get(),
                  .split_counters = split_counters_},
                 pass.stream, forward_algo_, {.input = input_});
  return y_;
}

const Tensor& Conv2d::backward(const Tensor& dy, Pass& pass) {
  return backward_adding(dy, Tensor(), pass);
}

const Tensor& Conv2d::backward_adding(const Tensor& dy, const Tensor& add, Pass& pass) {
  // The filter gradient first, so its all-reduce can start while the input gradient runs.
  conv2d_backward_filter(shape_,
                         {.x = x_,
                          .dy = dy,
                          .dw = weight_grad_,
                          .dbias = bias_grad_,
                          .workspace = workspace_.get(),
                          .split_counters = split_counters_,
                          .write = pass.grad_write()},
                         pass.stream, backward_filter_algo_, input_);
  if (bias_id_ >= 0) pass.grad_ready(bias_id_);
  pass.grad_ready(weight_id_);
  // The reduction of a BatchNorm whose output this layer read through it (after a deferring
  // forward: a training one) or as it is (which the identity branch's gradient joins first).
  const bool adds_first = data_grad_reduces_ != nullptr && data_grad_reduces_ == gate_from_;
  const bool reduces =
      dx_.defined() && data_grad_workspace_.defined() && (adds_first || input_.scale.defined());
  if (reduces) {
    // dx gated by the ReLU's mask, with the BatchNorm's backward sums (BatchNormFusion::block).
    conv2d_backward_data(shape_,
                         {.dy = dy,
                          .w = weight_.current(),
                          .dx = dx_,
                          .workspace = data_grad_workspace_,
                          .add = adds_first ? add : Tensor()},
                         pass.stream, backward_data_algo_,
                         data_grad_reduces_->backward_fusion(pass));
    if (add.defined() && !adds_first) engine::add({.a = dx_, .b = add, .y = dx_}, pass.stream);
  } else if (dx_.defined()) {
    conv2d_backward_data(shape_,
                         {.dy = dy,
                          .w = weight_.current(),
                          .dx = dx_,
                          .workspace = workspace_.get(),
                          .split_counters = split_counters_,
                          .add = add},
                         pass.stream, backward_data_algo_);
  }
  return dx_;
}

std::vector<ConvProblem> Conv2d::problems(DType dtype, Fp32Math math) const {
  std::vector<ConvProblem> problems;
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_filter}) {
    // The network's first layer: nothing reads its input gradient.
    if (pass == ConvPass::backward_data && !input_grad_) continue;
    problems.push_back({shape_, pass, dtype, math, fusion_of(pass)});
  }
  return problems;
}

}  // namespace engine::nn
