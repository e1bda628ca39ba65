// The ResNet zoo's structure: torchvision's parameter counts for every arch, its layer
// shapes, and gradients reported in the order of the flat layout, exactly once each.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "kernels/error.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/copy.h"
#include "kernels/runtime.h"
#include "nn/conv2d.h"
#include "nn/cross_entropy.h"
#include "nn/resnet.h"

namespace engine::nn {
namespace {

TEST(ResNet, ParameterCountsMatchTorchvision) {
  // sum(p.numel() for p in torchvision.models.<arch>().parameters()), 1000 classes.
  const std::pair<const char*, int64_t> expected[] = {
      {"resnet18", 11689512},  {"resnet34", 21797672},  {"resnet50", 25557032},
      {"resnet101", 44549160}, {"resnet152", 60192808},
  };
  for (const auto& [arch, count] : expected) {
    ResNet model(arch, {});
    EXPECT_EQ(model.params().parameter_count(), count) << arch;
  }
  ResNet ten_classes("resnet18", {.num_classes = 10});
  EXPECT_EQ(ten_classes.params().parameter_count(), 11689512 - 990 * 513);
}

// On CUDA the conv passes split K into partials where the output has few tiles; the layers
// share one buffer of the largest size any of them needs instead of holding one each.
TEST(ResNetCuda, LayersShareOneScratchOfTheLargestSize) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  const Device gpu = Device::cuda(0);
  Stream stream(gpu);
  ResNet model("resnet18", {.num_classes = 10});
  model.allocate(gpu, stream);
  model.setup({8, 32, 32, 3}, DType::f32, stream);
  int64_t largest = 0, total = 0;
  for (const Conv2d* conv : model.conv_layers()) {
    const Conv2dShape& shape = conv->shape();
    const int64_t needed = std::max({conv2d_forward_workspace_numel(shape, gpu),
                                     conv2d_backward_data_workspace_numel(shape, gpu),
                                     conv2d_backward_filter_workspace_numel(shape, gpu)});
    largest = std::max(largest, needed);
    total += needed;
  }
  EXPECT_GT(total, 2 * largest);  // several layers split: sharing saves memory
  ASSERT_TRUE(model.scratch().defined());
  EXPECT_EQ(model.scratch().numel(), largest);
  EXPECT_EQ(model.scratch().device(), gpu);
  // A smaller batch (an epoch's last) keeps the larger buffer.
  model.setup({2, 32, 32, 3}, DType::f32, stream);
  EXPECT_EQ(model.scratch().numel(), largest);
}

TEST(ResNet, NamesFollowTorchvision) {
  ResNet model("resnet50", {});
  const ParameterSet& p = model.params();
  for (const char* name :
       {"conv1.weight", "bn1.weight", "layer1.0.conv3.weight", "layer2.0.downsample.0.weight",
        "layer4.2.bn3.bias", "fc.weight", "fc.bias"}) {
    EXPECT_NE(p.find(name), nullptr) << name;
  }
  EXPECT_NE(p.find_buffer("layer2.0.downsample.1.running_mean"), nullptr);
  EXPECT_EQ(p.find("layer1.0.downsample.0.bias"), nullptr);  // convs have no bias
  // resnet50: 53 BatchNorms, each with two buffers and a counter.
  EXPECT_EQ(p.buffers().size(), 106u);
  EXPECT_EQ(p.counters().size(), 53u);
  // The stride of a bottleneck's downsampling block sits on its 3x3 conv (v1.5).
  EXPECT_EQ(p.find("layer2.0.conv2.weight")->shape, (Shape{128, 3, 3, 128}));
}

TEST(ResNet, UnknownArchNamesTheChoices) {
  try {
    ResNet model("resnet19", {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown arch 'resnet19' (choose one of resnet18, "
                                         "resnet34, resnet50, resnet101, resnet152)"),
              std::string::npos)
        << e.what();
  }
}

TEST(ResNet, ConvLayersGiveTheLayerTable) {
  Stream stream;
  ResNet model("resnet18", {.num_classes = 10});
  model.allocate(Device::cpu(), stream);
  EXPECT_EQ(model.setup({2, 64, 64, 3}, DType::f32, stream), (Shape{2, 10}));
  const std::vector<const Conv2d*> convs = model.conv_layers();
  ASSERT_EQ(convs.size(), 20u);  // stem + 16 3x3 + 3 downsampling 1x1
  EXPECT_EQ(convs[0]->name(), "conv1");
  EXPECT_EQ(convs[0]->shape().output_shape(), (Shape{2, 32, 32, 64}));
  EXPECT_EQ(convs.back()->name(), "layer4.1.conv2");
  EXPECT_EQ(convs.back()->shape().input_shape(), (Shape{2, 2, 2, 512}));
}

TEST(ResNet, BackwardReportsEveryGradientOnceInLayoutOrder) {
  Stream stream;
  for (const char* arch : {"resnet18", "resnet50"}) {
    SCOPED_TRACE(arch);
    ResNet model(arch, {.num_classes = 10});
    model.allocate(Device::cpu(), stream);
    model.setup({2, 32, 32, 3}, DType::f32, stream);
    Tensor images = Tensor::zeros({2, 32, 32, 3}, DType::f32, Device::cpu(), stream);
    fill(images, 0.5f, stream);
    Tensor labels = Tensor::from_ints({2}, {1, 7});
    CrossEntropyLoss loss;
    loss.setup(2, 10, DType::f32, Device::cpu());
    std::vector<ParameterId> reported;
    Pass pass{stream, true, false, [&](ParameterId id) { reported.push_back(id); }};
    loss.forward(model.forward(images, pass), labels, stream);
    model.backward(loss.backward(stream), pass);
    const ParameterSet& params = model.params();
    ASSERT_EQ(reported.size(), params.parameters().size());
    EXPECT_EQ(std::set<ParameterId>(reported.begin(), reported.end()).size(), reported.size());
    for (size_t i = 1; i < reported.size(); ++i) {
      EXPECT_LT(params.info(reported[i - 1]).offset, params.info(reported[i]).offset)
          << params.info(reported[i - 1]).name << " then " << params.info(reported[i]).name;
    }
    EXPECT_EQ(params.info(reported.front()).name, "fc.bias");
    EXPECT_EQ(params.info(reported.back()).name, "conv1.weight");
  }
}

}  // namespace
}  // namespace engine::nn

namespace engine::nn {
namespace {

TEST(ResNet, PlanGivesTheShapesWithoutAllocating) {
  ResNet model("resnet50", {});
  EXPECT_EQ(model.plan({8, 224, 224, 3}), (Shape{8, 1000}));
  EXPECT_FALSE(model.params().allocated());
  const std::vector<const Conv2d*> convs = model.conv_layers();
  ASSERT_EQ(convs.size(), 53u);  // stem + 16 bottlenecks x 3 + 4 downsampling
  EXPECT_EQ(convs[0]->shape().output_shape(), (Shape{8, 112, 112, 64}));
  EXPECT_EQ(convs.back()->shape().input_shape(), (Shape{8, 7, 7, 512}));
  EXPECT_THROW(model.plan({8, 224, 224, 1}), Error);
}

}  // namespace
}  // namespace engine::nn

namespace engine::nn {
namespace {

TEST(ResNet, InitializationFollowsTorchvision) {
  Stream stream;
  for (bool zero_init : {false, true}) {
    ResNet model("resnet50", {.num_classes = 10, .zero_init_residual = zero_init, .seed = 1});
    model.allocate(Device::cpu(), stream);
    const ParameterSet& p = model.params();
    const auto values = [&](const std::string& name) {
      return p.value(static_cast<ParameterId>(p.find(name) - p.parameters().data()))
          .to_floats(stream);
    };
    // Each block's last BN weight: 0 with zero_init_residual, else 1 like every BN weight.
    for (float v : values("layer2.1.bn3.weight"))
      ASSERT_EQ(v, zero_init ? 0.f : 1.f);
    for (float v : values("layer2.1.bn2.weight"))
      ASSERT_EQ(v, 1.f);
    for (float v : values("layer2.1.bn2.bias"))
      ASSERT_EQ(v, 0.f);
    const BufferInfo* var = p.find_buffer("bn1.running_var");
    for (float v : p.buffer(static_cast<BufferId>(var - p.buffers().data())).to_floats(stream))
      ASSERT_EQ(v, 1.f);
    // kaiming_normal fan_out: std sqrt(2 / (K * R * S)) = sqrt(2 / 576) for layer1's 3x3.
    const std::vector<float> w = values("layer1.0.conv2.weight");
    double sumsq = 0;
    for (float v : w)
      sumsq += double{v} * v;
    EXPECT_NEAR(std::sqrt(sumsq / w.size()), std::sqrt(2.0 / 576), 0.02 * std::sqrt(2.0 / 576));
    // nn.Linear: U(-1/sqrt(in), 1/sqrt(in)) for fc's weight and bias.
    for (float v : values("fc.bias"))
      EXPECT_LE(std::abs(v), 1.f / std::sqrt(2048.f));
  }
}

}  // namespace
}  // namespace engine::nn
