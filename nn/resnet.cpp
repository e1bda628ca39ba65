#include "nn/resnet.h"

#include <algorithm>
#include <cmath>

#include "kernels/error.h"
#include "kernels/ops/copy.h"
#include "nn/activation_layers.h"
#include "nn/batchnorm2d.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/residual_block.h"

namespace engine::nn {
namespace {

struct ArchSpec {
  std::string_view name;
  bool bottleneck;
  int blocks[4];
};

constexpr ArchSpec kArchs[] = {
    {"resnet18", false, {2, 2, 2, 2}},  {"resnet34", false, {3, 4, 6, 3}},
    {"resnet50", true, {3, 4, 6, 3}},   {"resnet101", true, {3, 4, 23, 3}},
    {"resnet152", true, {3, 8, 36, 3}},
};

const ArchSpec& find_arch(std::string_view arch) {
  for (const ArchSpec& spec : kArchs)
    if (spec.name == arch) return spec;
  std::string choices;
  for (const std::string& name : resnet_arch_names())
    choices += (choices.empty() ? "" : ", ") + name;
  fail("unknown arch '" + std::string(arch) + "' (choose one of " + choices + ")");
}

}  // namespace

const std::vector<std::string>& resnet_arch_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const ArchSpec& spec : kArchs)
      list.emplace_back(spec.name);
    return list;
  }();
  return names;
}

ResNet::ResNet(std::string_view arch, const ResNetOptions& options)
    : arch_(arch), options_(options), layers_(std::make_unique<Sequential>("")) {
  const ArchSpec& spec = find_arch(arch);
  if (options.num_classes < 1) fail(arch_ + ": num_classes must be >= 1");
  auto stem_conv = std::make_unique<Conv2d>(params_, "conv1", Conv2dOptions{3, 64, 7, 2, 3, false});
  auto stem_norm =
      std::make_unique<BatchNorm2d>(params_, "bn1", BatchNormOptions{64, 1e-5f, 0.1f, true});
  stem_conv_ = stem_conv.get();
  stem_norm_ = stem_norm.get();
  layers_->add(std::move(stem_conv));
  layers_->add(std::move(stem_norm));
  layers_->add(std::make_unique<MaxPool2d>("maxpool", MaxPool2dParams{3, 2, 1}));
  int64_t channels = 64;
  ResidualBlock* previous = nullptr;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t{64} << stage;
    for (int b = 0; b < spec.blocks[stage]; ++b) {
      const int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
      auto block = spec.bottleneck
                       ? make_bottleneck(params_, std::move(name), channels, planes, stride)
                       : make_basic_block(params_, std::move(name), channels, planes, stride);
      channels = spec.bottleneck ? 4 * planes : planes;
      // Each block's first convolution reads the block before's output (wire_across_layers).
      if (previous != nullptr) previous->last_norm().set_read_by_next_block(true);
      previous = block.get();
      layers_->add(std::move(block));
    }
  }
  layers_->add(std::make_unique<GlobalAvgPool>("avgpool"));
  layers_->add(std::make_unique<Linear>(params_, "fc", channels, options.num_classes));
}

void ResNet::allocate(Device device, Stream& stream) {
  params_.allocate(device, stream);
  initialize(stream);
}

void ResNet::initialize(Stream& stream) {
  const uint64_t seed = options_.seed;
  // Convs kaiming-normal, fc as nn.Linear, BatchNorm weight 1 / bias 0 / running_var 1.
  walk(*layers_, [&](Layer& layer) {
    if (const auto* conv = dynamic_cast<const Conv2d*>(&layer)) {
      Tensor w = params_.value(conv->weight_id());
      kaiming_normal_fan_out(w, seed, static_cast<uint64_t>(conv->weight_id()), stream);
    } else if (const auto* fc = dynamic_cast<const Linear*>(&layer)) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(fc->in_features()));
      Tensor w = params_.value(fc->weight_id()), b = params_.value(fc->bias_id());
      uniform_fill(w, bound, seed, static_cast<uint64_t>(fc->weight_id()), stream);
      uniform_fill(b, bound, seed, static_cast<uint64_t>(fc->bias_id()), stream);
    } else if (auto* bn = dynamic_cast<BatchNorm2d*>(&layer)) {
      bn->reset_state(stream);
    }
  });
  // Then (a block comes before its BatchNorms in the walk) each block's last BN weight 0.
  if (options_.zero_init_residual) {
    walk(*layers_, [&](Layer& layer) {
      if (auto* block = dynamic_cast<ResidualBlock*>(&layer)) {
        Tensor w = params_.value(block->last_norm().weight_id());
        fill(w, 0.f, stream);
      }
    });
  }
}

namespace {
void require_images(const std::string& arch, const Shape& images) {
  if (images.size() != 4 || images[3] != 3) {
    fail(arch + ": images are " + shape_str(images) + ", expected [N, H, W, 3] (NHWC)");
  }
}
}  // namespace

Shape ResNet::setup(const Shape& images, DType dtype, Stream& stream, const ConvPlans* conv_plans) {
  if (!params_.allocated()) fail(arch_ + ": setup() before allocate()");
  require_images(arch_, images);
  scratch_.begin();
  SetupContext context{params_.device(), dtype, stream, false};
  context.scratch = &scratch_;
  context.conv_plans = conv_plans;
  context.fusion = fusion_;
  if (dtype != DType::f32) {
    weight_copy_.prepare(params_, dtype);
    context.weight_copy = &weight_copy_;
  }
  // The activation gradients' two buffers: sized by a pass that allocates nothing, then
  // handed out by the allocating one (nn/gradient_arena.h); planned either way, for the count.
  gradients_.plan(*layers_, images, context);
  gradient_memory_ = {.shared = 0, .per_layer = gradients_.planned_per_layer_numel()};
  Shape logits;
  if (shared_gradients_) {
    logits = gradients_.setup(*layers_, images, context);
    gradient_memory_.shared = gradients_.numel();
  } else {
    gradients_.release();
    logits = layers_->setup(images, context);
  }
  wire_across_layers(context);
  scratch_.allocate(params_.device());
  return logits;
}

void ResNet::wire_across_layers(const SetupContext& context) {
  stem_conv_->feed_batchnorm_stats(stem_norm_, context);
  // The blocks follow one another directly in layers_; layer1.0 follows the max pooling.
  ResidualBlock* previous = nullptr;
  layers_->for_each_child([&](Layer& layer) {
    auto* block = dynamic_cast<ResidualBlock*>(&layer);
    if (block != nullptr) block->follow(previous, context);
    previous = block;
  });
}

Shape ResNet::plan(const Shape& images) {
  require_images(arch_, images);
  Stream host;
  return layers_->setup(images, SetupContext{Device::cpu(), DType::f32, host, false, false});
}

const Tensor& ResNet::forward(const Tensor& images, Pass& pass) {
  return layers_->forward(images, pass);
}

void ResNet::backward(const Tensor& dlogits, Pass& pass) {
  pass.accumulate_grads = params_.grads_hold_values();
  layers_->backward(dlogits, pass);
  params_.mark_grads_written();
}

std::vector<const Conv2d*> ResNet::conv_layers() const {
  std::vector<const Conv2d*> convs;
  walk(*layers_, [&](const Layer& layer) {
    if (const auto* conv = dynamic_cast<const Conv2d*>(&layer)) convs.push_back(conv);
  });
  return convs;
}

std::vector<ConvProblem> ResNet::conv_problems(const Shape& images, DType dtype, Fp32Math math) {
  std::vector<ConvProblem> problems;
  for (const CountedConvProblem& counted : counted_conv_problems(images, dtype, math))
    problems.push_back(counted.problem);
  return problems;
}

std::vector<ResNet::CountedConvProblem> ResNet::counted_conv_problems(const Shape& images,
                                                                      DType dtype, Fp32Math math) {
  require_images(arch_, images);
  // setup()'s shapes and wiring (which convolution fuses which BatchNorm: the fused passes
  // are problems of their own), allocating nothing.
  Stream host;
  SetupContext context{params_.device(), dtype, host, false, false};
  context.fusion = fusion_;
  layers_->setup(images, context);
  wire_across_layers(context);
  std::vector<CountedConvProblem> problems;
  for (const Conv2d* conv : conv_layers()) {
    for (const ConvProblem& problem : conv->problems(dtype, math)) {
      const auto found = std::find_if(problems.begin(), problems.end(),
                                      [&](const auto& p) { return p.problem == problem; });
      if (found == problems.end()) {
        problems.push_back({problem, 1});
      } else {
        ++found->count;
      }
    }
  }
  return problems;
}

}  // namespace engine::nn
