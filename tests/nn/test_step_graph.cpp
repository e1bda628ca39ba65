// A resnet18 training step captured once as a CUDA graph (kernels/cuda_graph.h) and replayed
// gives the bits of the same steps run kernel by kernel: weights, momentum and BatchNorm's
// running statistics (bf16, the GPU's precision; fp32 differs only in which kernels are
// captured). On the sim device in CI, whose runtime refuses what a
// real capture refuses (sim/cuda/capture.h); skipped without a CUDA device.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "kernels/cuda_graph.h"
#include "kernels/runtime.h"
#include "nn/cross_entropy.h"
#include "nn/resnet.h"
#include "nn/sgd.h"

namespace engine::nn {
namespace {

constexpr int64_t kBatch = 2, kSize = 32, kClasses = 10;

// A model, its data and its optimizer, stepped either way.
class Trainer {
 public:
  explicit Trainer(DType dtype)
      : stream_(Device::cuda(0)), model_("resnet18", {.num_classes = kClasses, .seed = 9}) {
    const Device gpu = stream_.device();
    model_.allocate(gpu, stream_);
    model_.setup({kBatch, kSize, kSize, 3}, dtype, stream_);
    std::mt19937 rng(4);
    std::normal_distribution<float> normal;
    std::vector<float> pixels(static_cast<size_t>(kBatch * kSize * kSize * 3));
    for (float& v : pixels)
      v = normal(rng);
    images_ = Tensor::from_floats({kBatch, kSize, kSize, 3}, pixels, dtype).to(gpu, stream_);
    labels_ = Tensor::from_ints({kBatch}, {3, 8}).to(gpu, stream_);
    loss_.setup(kBatch, kClasses, dtype, gpu);
    sgd_ = std::make_unique<Sgd>(
        model_.params(), SgdConfig{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f}, stream_);
  }
  void step() {
    Pass pass{stream_, true, false, {}};
    model_.params().zero_grad();
    loss_.forward(model_.forward(images_, pass), labels_, stream_);
    model_.backward(loss_.backward(stream_), pass);
    sgd_->step(0.05f, stream_);
  }
  CudaGraph capture() {
    return CudaGraph::capture(stream_, "a resnet18 step", [this] { step(); });
  }
  Stream& stream() { return stream_; }
  // Weights, then the momentum buffer, then the running statistics.
  std::vector<std::vector<float>> state() {
    std::vector<std::vector<float>> values = {model_.params().flat_values().to_floats(stream_)};
    for (const auto& [name, buffer] : sgd_->state_buffers())
      values.push_back(buffer->to_floats(stream_));
    for (size_t id = 0; id < model_.params().buffers().size(); ++id)
      values.push_back(model_.params().buffer(static_cast<BufferId>(id)).to_floats(stream_));
    return values;
  }

 private:
  Stream stream_;
  ResNet model_;
  CrossEntropyLoss loss_;
  std::unique_ptr<Sgd> sgd_;
  Tensor images_, labels_;
};

TEST(ResNetCuda, CapturedStepReplaysTheBitsOfTheUncapturedOne) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  Trainer uncaptured(DType::bf16), captured(DType::bf16);
  for (int i = 0; i < 3; ++i)
    uncaptured.step();
  // The first step starts the momentum (a different kernel): captured after it, as the
  // trainer does.
  captured.step();
  const std::vector<std::vector<float>> after_one = captured.state();
  const CudaGraph graph = captured.capture();
  EXPECT_GT(graph.nodes(), 100u);
  EXPECT_EQ(captured.state(), after_one);  // capturing ran nothing
  graph.replay(captured.stream());
  graph.replay(captured.stream());
  const std::vector<std::vector<float>> expected = uncaptured.state();
  EXPECT_NE(expected, after_one);
  EXPECT_TRUE(captured.state() == expected) << "the replays' state differs from the steps'";
}

}  // namespace
}  // namespace engine::nn
