// The engine learns: 200 single-process SGD steps of resnet18 on a fixed random batch of 16
// images (32x32, 10 classes) drive the training loss from chance (ln 10 = 2.3) to near zero,
// as memorizing a batch should; a model that cannot learn (a wrong gradient sign or a
// gradient that never reaches the weights) stays near 2.3.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "memorize_batch.h"

namespace engine::nn {
namespace {

TEST(Training, Resnet18MemorizesAFixedBatchIn200Steps) {
  constexpr int kSteps = 200;
  const std::vector<double> losses = testing::memorize_batch({.dtype = DType::f32,
                                                              .steps = kSteps,
                                                              .model_seed = 3,
                                                              .data_seed = 11,
                                                              .weight_decay = 1e-4f});
  for (size_t step = 0; step < losses.size(); ++step)
    ASSERT_TRUE(std::isfinite(losses[step])) << "step " << step;
  const auto mean = [&](size_t first, size_t count) {
    return std::accumulate(losses.begin() + first, losses.begin() + first + count, 0.0) / count;
  };
  const double end = mean(kSteps - 10, 10);
  std::printf("  loss: step 0 %.4f, steps 1-10 %.4f, last 10 steps %.6f\n", losses[0], mean(1, 10),
              end);
  EXPECT_GT(losses[0], 1.5);  // chance is ln 10
  EXPECT_LT(mean(1, 10), losses[0]);
  EXPECT_LT(end, 0.05);
}

}  // namespace
}  // namespace engine::nn
