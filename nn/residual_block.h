// torchvision's BasicBlock and Bottleneck (ResNet v1.5: the stride sits on the 3x3 conv):
//   stages:     conv -> BN + ReLU, ..., conv -> BN (+ identity) + ReLU
//   identity:   x, or downsample(x) = conv1x1/stride -> BN when the shape changes
// Names follow torchvision: conv1, bn1, conv2, bn2[, conv3, bn3], downsample.0/.1.
//
// Parameters are registered so that their layout follows backward's order: the last BN,
// the downsample branch, then the stages in reverse (see nn/parameters.h).
#pragma once

#include <memory>
#include <vector>

#include "nn/batchnorm2d.h"
#include "nn/conv2d.h"
#include "nn/layer.h"

namespace engine::nn {

class ResidualBlock final : public Layer {
 public:
  struct Stage {
    int64_t out_channels;
    int64_t kernel;
    int64_t stride;
  };
  // type: "BasicBlock" or "Bottleneck".
  ResidualBlock(ParameterSet& params, std::string name, std::string_view type, int64_t in_channels,
                const std::vector<Stage>& stages);

  std::string_view type() const override { return type_; }
  Shape setup(const Shape& input, const SetupContext& context) override;
  const Tensor& forward(const Tensor& x, Pass& pass) override;
  const Tensor& backward(const Tensor& dy, Pass& pass) override;
  void for_each_child(const std::function<void(Layer&)>& fn) override;

  // The BN whose weight torchvision's zero_init_residual sets to 0.
  BatchNorm2d& last_norm() { return *norms_.back(); }
  // `previous`: the block whose output is this one's input (null: another layer's). With
  // context.fusion full on CUDA, this block's input gradient (its first convolution's, plus
  // the identity branch's) then gates itself by that output and does the previous block's last
  // BatchNorm's backward reduction (Conv2d::gate_input_grad_by). After setup, with its context.
  void follow(ResidualBlock* previous, const SetupContext& context);
  bool has_downsample() const { return downsample_conv_ != nullptr; }

 private:
  std::string type_;
  std::vector<std::unique_ptr<Conv2d>> convs_;
  std::vector<std::unique_ptr<BatchNorm2d>> norms_;
  std::unique_ptr<Conv2d> downsample_conv_;
  std::unique_ptr<BatchNorm2d> downsample_norm_;
};

// torchvision's blocks; out channels = planes (BasicBlock) or 4 * planes (Bottleneck).
std::unique_ptr<ResidualBlock> make_basic_block(ParameterSet& params, std::string name,
                                                int64_t in_channels, int64_t planes,
                                                int64_t stride);
std::unique_ptr<ResidualBlock> make_bottleneck(ParameterSet& params, std::string name,
                                               int64_t in_channels, int64_t planes, int64_t stride);

}  // namespace engine::nn
