#include "nn/residual_block.h"

#include "nn/gradient_arena.h"
#include "nn/shape_checks.h"

namespace engine::nn {

ResidualBlock::ResidualBlock(ParameterSet& params, std::string name, std::string_view type,
                             int64_t in_channels, const std::vector<Stage>& stages)
    : Layer(std::move(name)), type_(type) {
  if (stages.size() < 2) fail_in(*this, "needs at least two conv stages");
  int64_t channels = in_channels, stride = 1;
  const size_t last = stages.size() - 1;
  for (size_t i = 0; i < stages.size(); ++i) {
    const Stage& s = stages[i];
    const std::string index = std::to_string(i + 1);
    convs_.push_back(std::make_unique<Conv2d>(
        params, child_name(this->name(), "conv" + index),
        Conv2dOptions{channels, s.out_channels, s.kernel, s.stride, s.kernel / 2, false}));
    // The last stage's BN is registered after the downsample branch (backward's order).
    if (i < last) {
      norms_.push_back(
          std::make_unique<BatchNorm2d>(params, child_name(this->name(), "bn" + index),
                                        BatchNormOptions{s.out_channels, 1e-5f, 0.1f, true}));
    }
    channels = s.out_channels;
    stride *= s.stride;
  }
  if (stride != 1 || channels != in_channels) {
    downsample_conv_ =
        std::make_unique<Conv2d>(params, child_name(this->name(), "downsample.0"),
                                 Conv2dOptions{in_channels, channels, 1, stride, 0, false});
    downsample_norm_ = std::make_unique<BatchNorm2d>(
        params, child_name(this->name(), "downsample.1"), BatchNormOptions{channels});
  }
  norms_.push_back(std::make_unique<BatchNorm2d>(
      params, child_name(this->name(), "bn" + std::to_string(last + 1)),
      BatchNormOptions{.channels = channels, .relu = true, .residual = true}));
}

Shape ResidualBlock::setup(const Shape& input, const SetupContext& context) {
  // The activation gradients' regions (nn/gradient_arena.h). Backward runs the last BN, the
  // downsample branch, then the chain conv_last, bn_last-1, ..., conv2, bn1, conv1, each link
  // reading only the gradient the link before it wrote: the BNs take turns in chain region a,
  // the inner convolutions and the downsample's BN (done before conv_last) in b. The first
  // convolution's input gradient (the block's) and the downsample convolution's (added to it at
  // the end) live through the block: the layer region. So does the last BN's ReLU gradient
  // where it is the identity's, without a downsample branch.
  const auto region = [&](GradientRegion r) {
    if (context.gradients != nullptr) context.gradients->enter(r);
  };
  const size_t last = convs_.size() - 1;
  const GradientRegion last_norm_region =
      !downsample_conv_ && norms_[last]->keeps_relu_grad(context) ? GradientRegion::layer
                                                                  : GradientRegion::chain_a;
  Shape shape = input;
  SetupContext inner = context;
  for (size_t i = 0; i < convs_.size(); ++i) {
    region(i == 0 ? GradientRegion::layer : GradientRegion::chain_b);
    shape = convs_[i]->setup(shape, inner);
    inner.input_grad = true;
    region(i == last ? last_norm_region : GradientRegion::chain_a);
    shape = norms_[i]->setup(shape, inner);
    convs_[i]->feed_batchnorm_stats(norms_[i].get(), inner);
    // Each stage's BN + ReLU output but the last (which feeds the identity's add) has one
    // reader, the next conv: it may apply them as it loads (BatchNormFusion::apply and up).
    if (i > 0) convs_[i]->read_input_through(norms_[i - 1].get(), inner);
  }
  Shape identity = input;
  if (downsample_conv_) {
    region(GradientRegion::layer);
    identity = downsample_conv_->setup(input, context);
    region(GradientRegion::chain_b);
    identity = downsample_norm_->setup(identity, inner);
    downsample_conv_->feed_batchnorm_stats(downsample_norm_.get(), inner);
  }
  region(GradientRegion::layer);
  if (identity != shape) {
    fail_in(*this, "the residual " + shape_str(identity) + " does not match the output " +
                       shape_str(shape));
  }
  return shape;
}

void ResidualBlock::follow(ResidualBlock* previous, const SetupContext& context) {
  convs_[0]->gate_input_grad_by(previous != nullptr ? &previous->last_norm() : nullptr, context);
}

const Tensor& ResidualBlock::forward(const Tensor& x, Pass& pass) {
  const Tensor* h = &x;
  const size_t last = convs_.size() - 1;
  for (size_t i = 0; i < last; ++i)
    h = &norms_[i]->forward(convs_[i]->forward(*h, pass), pass);
  h = &convs_[last]->forward(*h, pass);
  const Tensor& identity =
      downsample_conv_ ? downsample_norm_->forward(downsample_conv_->forward(x, pass), pass) : x;
  return norms_[last]->forward(*h, identity, pass);
}

const Tensor& ResidualBlock::backward(const Tensor& dy, Pass& pass) {
  const size_t last = convs_.size() - 1;
  const Tensor* g = &norms_[last]->backward(dy, pass);
  const Tensor& residual = norms_[last]->residual_grad();
  const Tensor& identity_grad =
      downsample_conv_
          ? downsample_conv_->backward(downsample_norm_->backward(residual, pass), pass)
          : residual;
  for (size_t i = last; i > 0; --i)
    g = &norms_[i - 1]->backward(convs_[i]->backward(*g, pass), pass);
  // The first convolution's input gradient takes the identity branch's (in its epilogue where
  // it can: one launch a block fewer than a separate add); without one (the network's first
  // layer) it computes the filter gradient alone.
  if (!convs_[0]->input_grad()) return convs_[0]->backward(*g, pass);
  return convs_[0]->backward_adding(*g, identity_grad, pass);
}

void ResidualBlock::for_each_child(const std::function<void(Layer&)>& fn) {
  for (size_t i = 0; i < convs_.size(); ++i) {
    fn(*convs_[i]);
    fn(*norms_[i]);
  }
  if (downsample_conv_) {
    fn(*downsample_conv_);
    fn(*downsample_norm_);
  }
}

std::unique_ptr<ResidualBlock> make_basic_block(ParameterSet& params, std::string name,
                                                int64_t in_channels, int64_t planes,
                                                int64_t stride) {
  return std::make_unique<ResidualBlock>(params, std::move(name), "BasicBlock", in_channels,
                                         std::vector<ResidualBlock::Stage>{
                                             {planes, 3, stride},
                                             {planes, 3, 1},
                                         });
}

std::unique_ptr<ResidualBlock> make_bottleneck(ParameterSet& params, std::string name,
                                               int64_t in_channels, int64_t planes,
                                               int64_t stride) {
  return std::make_unique<ResidualBlock>(params, std::move(name), "Bottleneck", in_channels,
                                         std::vector<ResidualBlock::Stage>{
                                             {planes, 1, 1},
                                             {planes, 3, stride},
                                             {4 * planes, 1, 1},
                                         });
}

}  // namespace engine::nn
