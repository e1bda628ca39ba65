// An optimizer step held by a CUDA graph (nn::Optimizer::stage_step / launch_step, as
// train/micro_step_graphs.h holds it): one launch_step() captured, then replayed for every later
// step with only stage_step() before each, gives the bits of the same steps run one by one,
// each at its own rate (a schedule that changes every step), for SGD (several weight-decay runs,
// nesterov), AdamW (bias corrections from the step count) and LARS, each after --clip-grad's
// clipping in the same graph. On the sim device in CI; skipped without a CUDA device.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda_graph.h"
#include "kernels/runtime.h"
#include "nn/adamw.h"
#include "nn/grad_clip.h"
#include "nn/lars.h"
#include "nn/sgd.h"
#include "tests/error_text.h"
#include "tests/nn/tiny_parameters.h"

namespace engine::nn {
namespace {

using testing::make_tiny_model;
using testing::write_tiny_grads;

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, ParameterSet& set,
                                          Stream& stream) {
  if (name == "adamw") {
    return std::make_unique<AdamW>(
        set, AdamWConfig{.lr = 1e-2f, .weight_decay = 0.05f, .decay_norm_and_bias = false}, stream);
  }
  if (name == "lars") {
    return std::make_unique<Lars>(
        set, LarsConfig{.lr = 1.f, .momentum = 0.9f, .weight_decay = 1e-3f, .eta = 0.02f}, stream);
  }
  return std::make_unique<Sgd>(set,
                               SgdConfig{.lr = 0.1f,
                                         .momentum = 0.9f,
                                         .weight_decay = 1e-3f,
                                         .nesterov = true,
                                         .decay_norm_and_bias = false},
                               stream);
}

float rate_of_step(int k) {
  return 0.1f / static_cast<float>(k + 1);
}

// The parameters and every state buffer, through the host.
std::vector<std::vector<float>> state(const ParameterSet& set, const Optimizer& optimizer,
                                      Stream& stream) {
  std::vector<std::vector<float>> values = {set.flat_values().to_floats(stream)};
  for (const auto& [name, buffer] : optimizer.state_buffers())
    values.push_back(buffer->to_floats(stream));
  return values;
}

TEST(OptimizerGraph, ReplaysEveryStepAtItsOwnRate) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  for (const std::string name : {"sgd", "adamw", "lars"}) {
    SCOPED_TRACE(name);
    Stream stream(Device::cuda(0));
    ParameterSet one_by_one, graphed;
    make_tiny_model(one_by_one, Device::cuda(0), 3, stream);
    make_tiny_model(graphed, Device::cuda(0), 3, stream);
    const std::unique_ptr<Optimizer> reference = make_optimizer(name, one_by_one, stream);
    const std::unique_ptr<Optimizer> optimizer = make_optimizer(name, graphed, stream);
    // A norm the gradients exceed: the clipping changes them.
    GradClip reference_clip(one_by_one, 0.5f, stream), clip(graphed, 0.5f, stream);
    CudaGraph graph;
    int replays = 0;
    for (int k = 0; k < 5; ++k) {
      write_tiny_grads(one_by_one, 30 + static_cast<uint64_t>(k), stream);
      write_tiny_grads(graphed, 30 + static_cast<uint64_t>(k), stream);
      reference_clip.clip(stream);
      reference->step(rate_of_step(k), stream);
      optimizer->stage_step(rate_of_step(k), stream);
      const auto launch = [&] {
        clip.clip(stream);
        optimizer->launch_step(stream);
      };
      if (!graph.defined() && optimizer->step_replayable()) {
        graph = CudaGraph::capture(stream, "an optimizer step", launch);
      }
      if (graph.defined()) {
        graph.replay(stream);
        ++replays;
      } else {
        launch();
      }
    }
    // SGD's first step starts the momentum (not replayable): captured at the second.
    EXPECT_EQ(replays, name == "sgd" ? 4 : 5);
    EXPECT_TRUE(state(graphed, *optimizer, stream) == state(one_by_one, *reference, stream))
        << "the replays' parameters or state differ from the steps'";
  }
}

TEST(OptimizerGraph, LaunchBeforeAnyStageIsAnError) {
  Stream stream;
  ParameterSet set;
  make_tiny_model(set, Device::cpu(), 3, stream);
  write_tiny_grads(set, 4, stream);
  for (const std::string name : {"sgd", "adamw", "lars"}) {
    const std::unique_ptr<Optimizer> optimizer = make_optimizer(name, set, stream);
    EXPECT_TRUE(engine::testing::contains(
        engine::testing::error_of([&] { optimizer->launch_step(stream); }),
        "::launch_step: no stage_step() before it"));
  }
}

}  // namespace
}  // namespace engine::nn
