// torchvision's ResNets (resnet18/34/50/101/152, v1.5), on NHWC images: the same structure,
// parameter and buffer names ("layer2.0.downsample.1.running_mean"), counts (resnet18:
// 11,689,512 parameters at 1000 classes; resnet50: 25,557,032) and initialization
// (kaiming-normal fan_out convs, BN weight 1 / bias 0, nn.Linear's default for fc, optional
// zero-init of each block's last BN). The model owns its ParameterSet.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nn/compute_weight.h"
#include "nn/conv2d.h"
#include "nn/gradient_arena.h"
#include "nn/layer.h"
#include "nn/parameters.h"
#include "nn/sequential.h"

namespace engine::nn {

struct ResNetOptions {
  int64_t num_classes = 1000;
  bool zero_init_residual = false;
  uint64_t seed = 0;  // for the initial weights (nn/init.h)
};

// "resnet18", ...: the names make_resnet accepts.
const std::vector<std::string>& resnet_arch_names();

class ResNet {
 public:
  // Builds and registers the layers; throws engine::Error naming the choices for an
  // unknown arch.
  ResNet(std::string_view arch, const ResNetOptions& options);
  ResNet(const ResNet&) = delete;
  ResNet& operator=(const ResNet&) = delete;

  // Allocates the parameters on device and initializes them from options.seed.
  void allocate(Device device, Stream& stream);
  // For images [N, H, W, 3] (NHWC); returns the logits' shape [N, num_classes].
  // conv_plans: the convolutions' algorithms (kernels/conv_plans.h; null: the heuristic's).
  Shape setup(const Shape& images, DType dtype, Stream& stream,
              const ConvPlans* conv_plans = nullptr);
  // How much of each BatchNorm the next setup() lets the convolutions do in training on CUDA
  // (nn/batchnorm_fusion.h; --fusion). Default full.
  void set_fusion(BatchNormFusion fusion) { fusion_ = fusion; }
  // Whether the next setup() puts the activation gradients in two shared buffers
  // (nn/gradient_arena.h; default) or gives each layer its own, as before: the same results bit
  // for bit (tests compare them); resnet50's gradients then take about a quarter of the memory.
  void set_shared_gradients(bool on) { shared_gradients_ = on; }
  // After setup(): the elements the activation gradients take; with shared gradients also what
  // a buffer per layer would take (the memory report prints both).
  struct GradientMemory {
    int64_t shared = 0;     // both buffers; 0 without shared gradients
    int64_t per_layer = 0;  // every layer's own
  };
  GradientMemory gradient_memory() const { return gradient_memory_; }
  // The bf16 (or other non-f32) copy of every weight the layers compute with, prepared by a
  // setup() in that dtype; an optimizer may write it (nn::Sgd::write_compute_copy).
  ComputeWeightCopy& weight_copy() { return weight_copy_; }
  // The shapes alone (no allocation, no parameters needed): afterwards conv_layers() give
  // every convolution's geometry, but forward and backward must wait for a real setup().
  Shape plan(const Shape& images);
  const Tensor& forward(const Tensor& images, Pass& pass);
  // dlogits: the loss gradient at the logits. Parameter gradients accumulate unless
  // params().zero_grad() was called since the last backward.
  void backward(const Tensor& dlogits, Pass& pass);

  const std::string& arch() const { return arch_; }
  const ResNetOptions& options() const { return options_; }
  ParameterSet& params() { return params_; }
  const ParameterSet& params() const { return params_; }
  const Sequential& layers() const { return *layers_; }
  // The scratch every layer shares (nn/layer_scratch.h), allocated by setup().
  const Tensor& scratch() const { return scratch_.tensor(); }
  // The top-level layers, to drive one by one (bench_step --profile times each).
  Sequential& layers() { return *layers_; }
  // Every Conv2d in forward order (their shapes after setup): bench_kernels' layer table.
  std::vector<const Conv2d*> conv_layers() const;
  // The convolution passes a training step on `images` runs on the parameters' device with
  // set_fusion's BatchNorm fusion, each once. Like plan(), a setup that allocates nothing:
  // setup() must follow before the next forward.
  std::vector<ConvProblem> conv_problems(const Shape& images, DType dtype, Fp32Math math);
  // The same, each with how many of the model's convolutions run it (bench_kernels --tune
  // weighs a pass's time by it).
  struct CountedConvProblem {
    ConvProblem problem;
    int count = 0;
  };
  std::vector<CountedConvProblem> counted_conv_problems(const Shape& images, DType dtype,
                                                        Fp32Math math);

 private:
  void initialize(Stream& stream);
  // The fusions across layers, after the layers' own setup: the stem's statistics, and each
  // residual block's input gradient doing the block before's last BatchNorm's reduction.
  void wire_across_layers(const SetupContext& context);

  std::string arch_;
  ResNetOptions options_;
  ParameterSet params_;  // declared before the layers, which hold references to it
  std::unique_ptr<Sequential> layers_;
  GradientArena gradients_;        // the activation gradients (nn/gradient_arena.h)
  SharedScratch scratch_;          // the layers' split-K partials (nn/layer_scratch.h)
  ComputeWeightCopy weight_copy_;  // bf16 activations: every weight's bf16 copy, cast at once
  Conv2d* stem_conv_ = nullptr;    // conv1 and bn1, held by layers_
  BatchNorm2d* stem_norm_ = nullptr;
  BatchNormFusion fusion_ = BatchNormFusion::full;
  bool shared_gradients_ = true;
  GradientMemory gradient_memory_;
};

}  // namespace engine::nn
