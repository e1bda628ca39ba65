// The activation gradients in two shared buffers (nn/gradient_arena.h): top-level layers at
// positions of the same parity share one, each layer's gradients carved one after another;
// the memory that saves, counted by hand; and training steps that are the same bit for bit
// as with a buffer per layer, on the CPU and on the CUDA device (the sim device in CI), with
// and without BatchNorm fused into the convolutions.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "kernels/error.h"
#include "kernels/runtime.h"
#include "nn/activation_layers.h"
#include "nn/cross_entropy.h"
#include "nn/gradient_arena.h"
#include "nn/resnet.h"
#include "nn/sequential.h"

namespace engine::nn {
namespace {

// Four ReLUs in a chain, set up through an arena as ResNet::setup does.
struct ReluChain {
  Stream stream;
  Sequential chain{""};
  ReLU* relus[4] = {};
  GradientArena arena;

  explicit ReluChain(const Shape& shape) {
    for (int i = 0; i < 4; ++i)
      relus[i] = &chain.add(std::make_unique<ReLU>("relu" + std::to_string(i)));
    const SetupContext context{Device::cpu(), DType::f32, stream, false};
    arena.plan(chain, shape, context);
    arena.setup(chain, shape, context);
  }
};

TEST(GradientArena, LayersOfTheSameParityShareTheirBuffer) {
  const Shape shape{1, 4, 4, 8};  // 128 elements, each take rounded up to 256
  ReluChain net(shape);
  // relu0 takes nothing (the network's input needs no gradient); relu1 and relu3 share the
  // odd buffer, relu2 has the even one.
  EXPECT_EQ(net.arena.numel(), 256 + 256);
  EXPECT_EQ(net.arena.planned_per_layer_numel(), 3 * 128);
  // Values from -7.5 to 8.5: the chain's ReLUs pass the positive ones, and backward passes dy
  // where the output is positive.
  std::vector<float> x(128), dy(128);
  for (int i = 0; i < 128; ++i) {
    x[static_cast<size_t>(i)] = static_cast<float>(i % 17) - 7.5f;
    dy[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i);
  }
  Pass pass{net.stream, true, false, {}};
  net.chain.forward(Tensor::from_floats(shape, x), pass);
  const Tensor grad = Tensor::from_floats(shape, dy);
  const Tensor& dx3 = net.relus[3]->backward(grad, pass);
  const Tensor& dx2 = net.relus[2]->backward(dx3, pass);
  // relu2 read relu3's gradient before relu1 overwrites the shared buffer.
  const std::vector<float> dx2_values = dx2.to_floats(net.stream);
  const Tensor& dx1 = net.relus[1]->backward(dx2, pass);
  EXPECT_EQ(dx1.raw_data(), dx3.raw_data());
  EXPECT_NE(dx1.raw_data(), dx2.raw_data());
  EXPECT_FALSE(net.relus[0]->backward(dx1, pass).defined());
  const std::vector<float> dx1_values = dx1.to_floats(net.stream);
  for (size_t i = 0; i < dy.size(); ++i) {
    const float expected = x[i] > 0 ? dy[i] : 0.f;
    EXPECT_EQ(dx2_values[i], expected) << i;
    EXPECT_EQ(dx1_values[i], expected) << i;
  }
}

// A layer whose setup takes five gradient buffers of 256 elements in the arena's regions, as
// a residual block's children do: the layer region's side by side, each chain link from its
// region's start.
class RegionProbe final : public Layer {
 public:
  RegionProbe() : Layer("probe") {}
  std::string_view type() const override { return "RegionProbe"; }
  Shape setup(const Shape& input, const SetupContext& context) override {
    const Shape take{256};
    const auto in = [&](GradientRegion region, Tensor& buffer) {
      context.gradients->enter(region);
      setup_gradient_buffer(buffer, context, take);
    };
    in(GradientRegion::layer, first);
    in(GradientRegion::chain_a, link_a1);
    in(GradientRegion::chain_b, link_b);
    in(GradientRegion::chain_a, link_a2);
    in(GradientRegion::layer, second);
    return input;
  }
  const Tensor& forward(const Tensor& x, Pass&) override { return x; }
  const Tensor& backward(const Tensor& dy, Pass&) override { return dy; }
  Tensor first, second, link_a1, link_a2, link_b;
};

TEST(GradientArena, ChainLinksShareTheirRegionAfterTheLayerRegion) {
  Stream stream;
  Sequential net("");
  RegionProbe& probe = net.add(std::make_unique<RegionProbe>());
  GradientArena arena;
  const SetupContext context{Device::cpu(), DType::f32, stream, false};
  arena.plan(net, {1, 1, 1, 1}, context);
  arena.setup(net, {1, 1, 1, 1}, context);
  // layer: first, second | chain a: link_a1 = link_a2 | chain b: link_b
  EXPECT_EQ(arena.numel(), 4 * 256);
  EXPECT_EQ(arena.planned_per_layer_numel(), 5 * 256);
  const auto at = [&](const Tensor& t) {
    return (static_cast<const float*>(t.raw_data()) -
            static_cast<const float*>(probe.first.raw_data()));
  };
  EXPECT_EQ(at(probe.second), 256);
  EXPECT_EQ(at(probe.link_a1), 512);
  EXPECT_EQ(at(probe.link_a2), 512);
  EXPECT_EQ(at(probe.link_b), 768);
}

TEST(GradientArena, AnAllocatingPassBeyondThePlanIsAnError) {
  Stream stream;
  Sequential chain("");
  chain.add(std::make_unique<ReLU>("relu0"));
  chain.add(std::make_unique<ReLU>("relu1"));
  GradientArena arena;
  const SetupContext context{Device::cpu(), DType::f32, stream, false};
  arena.plan(chain, {1, 4, 4, 8}, context);
  try {
    arena.setup(chain, {1, 8, 8, 8}, context);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("beyond what the planning pass counted"),
              std::string::npos)
        << error.what();
  }
}

// resnet18 on [2, 32, 32, 3] (CPU: no fusion), the elements of each top-level layer's
// gradients, in forward order, by region (nn/gradient_arena.h): the layer region holds a
// block's conv1 input gradient, the downsample conv's and, without a downsample branch, bn2's
// (its dx and, feeding the residual, its ReLU gradient, the identity's); chain region a the
// other BatchNorms' (bn1's dx; bn2's dx and ReLU gradient with a downsample), one link at a
// time; chain region b conv2's input gradient and the downsample BN's, one at a time. Only a
// residual BatchNorm takes a ReLU gradient. A layer needs layer + a + b:
//   0 conv1: none (the images need no gradient) | 1 bn1: 2x16x16x64 = 32768 | 2 maxpool: 32768
//   3, 4 layer1.0, layer1.1 (8192 each tensor): layer 3 x 8192, a 8192, b 8192 = 40960
//   5 layer2.0: layer 8192 + 8192, a max(4096, 2 x 4096), b 4096 = 28672
//   6 layer2.1 (4096): layer 3 x 4096, a 4096, b 4096 = 20480
//   7 layer3.0: layer 4096 + 4096, a 2 x 2048, b 2048 = 14336 | 8 layer3.1: 5 x 2048 = 10240
//   9 layer4.0: layer 2048 + 2048, a 2 x 1024, b 1024 = 7168 | 10 layer4.1: 5 x 1024 = 5120
//   11 avgpool: 1024 | 12 fc: 1024
// Odd positions: at most 40960 (layer1.0); even: 40960 (layer1.1). As a buffer per take, the
// blocks with a downsample branch count each take: 36864, 18432, 9216. Every take is a
// multiple of 256 elements here, so no alignment padding.
TEST(ResNet, SharedGradientBuffersHoldTheLargestLayerOfEachParity) {
  Stream stream;
  ResNet model("resnet18", {.num_classes = 10});
  model.allocate(Device::cpu(), stream);
  model.setup({2, 32, 32, 3}, DType::f32, stream);
  const int64_t per_layer =
      32768 + 32768 + 2 * 40960 + 36864 + 20480 + 18432 + 10240 + 9216 + 5120 + 1024 + 1024;
  EXPECT_EQ(model.gradient_memory().shared, 40960 + 40960);
  EXPECT_EQ(model.gradient_memory().per_layer, per_layer);
  model.set_shared_gradients(false);
  model.setup({2, 32, 32, 3}, DType::f32, stream);
  EXPECT_EQ(model.gradient_memory().shared, 0);
  EXPECT_EQ(model.gradient_memory().per_layer, per_layer);
}

// `steps` training steps (different images; each after the first accumulating onto the
// parameter gradients) of a model with its gradients shared or not: the logits of every step,
// every parameter gradient and the running statistics.
struct Steps {
  std::vector<std::vector<float>> logits, grads, buffers;
};

Steps run_steps(const std::string& arch, Device device, DType dtype, BatchNormFusion fusion,
                int steps, bool shared) {
  constexpr int64_t kBatch = 2, kSize = 32, kClasses = 10;
  Stream stream(device);
  ResNet model(arch, {.num_classes = kClasses, .seed = 5});
  model.allocate(device, stream);
  model.set_fusion(fusion);
  model.set_shared_gradients(shared);
  const Shape images{kBatch, kSize, kSize, 3};
  model.setup(images, dtype, stream);
  CrossEntropyLoss loss;
  loss.setup(kBatch, kClasses, dtype, device);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> pixels(static_cast<size_t>(shape_numel(images)));
  Steps run;
  model.params().zero_grad();
  for (int step = 0; step < steps; ++step) {
    for (float& v : pixels)
      v = normal(rng);
    const Tensor x = Tensor::from_floats(images, pixels, dtype).to(device, stream);
    const Tensor labels = Tensor::from_ints({kBatch}, {1 + step, 4}).to(device, stream);
    Pass pass{stream, true, false, {}};
    const Tensor& logits = model.forward(x, pass);
    loss.forward(logits, labels, stream);
    model.backward(loss.backward(stream), pass);
    run.logits.push_back(logits.to_floats(stream));
  }
  for (size_t id = 0; id < model.params().parameters().size(); ++id)
    run.grads.push_back(model.params().grad(static_cast<ParameterId>(id)).to_floats(stream));
  for (size_t id = 0; id < model.params().buffers().size(); ++id)
    run.buffers.push_back(model.params().buffer(static_cast<BufferId>(id)).to_floats(stream));
  return run;
}

void expect_same_bits(const std::string& arch, Device device, DType dtype, BatchNormFusion fusion,
                      int steps) {
  SCOPED_TRACE(arch + " " + std::string(dtype_name(dtype)) + " fusion " +
               std::string(batchnorm_fusion_name(fusion)));
  const Steps shared = run_steps(arch, device, dtype, fusion, steps, true);
  const Steps own = run_steps(arch, device, dtype, fusion, steps, false);
  // By name, not by value: a failure would print every element.
  const auto expect_equal = [](const auto& a, const auto& b, const char* what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(a[i] == b[i]) << what << " " << i << " differs";
  };
  expect_equal(shared.logits, own.logits, "the logits of step");
  expect_equal(shared.grads, own.grads, "the gradient of parameter");
  expect_equal(shared.buffers, own.buffers, "buffer");
}

TEST(ResNet, SharedGradientBuffersChangeNoBit) {
  for (const DType dtype : {DType::f32, DType::bf16})
    expect_same_bits("resnet18", Device::cpu(), dtype, BatchNormFusion::none, 2);
}

// On CUDA BatchNorm's passes move into the convolutions (full: up to a block's input gradient
// doing the block before's last BatchNorm's reduction, the furthest any layer reads another's
// gradient), on basic blocks and bottlenecks. One step each (the emulator's resnet50 step takes
// seconds): a layer writing over a gradient still to be read shows within one backward, and
// the unfused layers run the CPU case's code.
TEST(ResNetCuda, SharedGradientBuffersChangeNoBit) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  const Device gpu = Device::cuda(0);
  expect_same_bits("resnet18", gpu, DType::bf16, BatchNormFusion::full, 1);
  expect_same_bits("resnet50", gpu, DType::bf16, BatchNormFusion::full, 1);
}

}  // namespace
}  // namespace engine::nn
