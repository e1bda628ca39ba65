// ParameterSet: the flat layout in backward's order, alignment, views, and the errors.
#include <gtest/gtest.h>

#include "kernels/error.h"
#include "kernels/ops/copy.h"
#include "nn/parameters.h"

namespace engine::nn {
namespace {

TEST(ParameterSet, LaysOutInReverseRegistrationOrderAligned) {
  Stream stream;
  ParameterSet set;
  const ParameterId a = set.add_parameter("a.weight", {3, 5}, ParameterKind::linear_weight);
  const ParameterId b = set.add_parameter("a.bias", {3}, ParameterKind::bias);
  const ParameterId c = set.add_parameter("c.weight", {2, 1, 1, 17}, ParameterKind::conv_filter);
  const BufferId mean = set.add_buffer("bn.running_mean", {7});
  set.allocate(Device::cpu(), stream);
  // The last registered first: backward finishes it first.
  EXPECT_EQ(set.info(c).offset, 0);
  EXPECT_EQ(set.info(b).offset, 48);  // 34 elements, rounded up to 16
  EXPECT_EQ(set.info(a).offset, 64);
  EXPECT_EQ(set.flat_values().numel(), 80);
  EXPECT_EQ(set.flat_grads().numel(), 80);
  EXPECT_EQ(set.parameter_count(), 15 + 3 + 34);
  EXPECT_EQ(set.buffer(mean).numel(), 7);
  for (float v : set.flat_values().to_floats(stream))
    ASSERT_EQ(v, 0.f);
  // Views write through to the flat buffers.
  Tensor weight = set.value(a);
  EXPECT_EQ(weight.shape(), (Shape{3, 5}));
  fill(weight, 2.f, stream);
  const std::vector<float> flat = set.flat_values().to_floats(stream);
  EXPECT_EQ(flat[64], 2.f);
  EXPECT_EQ(flat[78], 2.f);
  EXPECT_EQ(flat[79], 0.f);  // the alignment gap stays zero
  EXPECT_EQ(set.grad(a).raw_data(), static_cast<float*>(set.flat_grads().raw_data()) + 64);
}

TEST(ParameterSet, FindsByNameAndRefusesMisuse) {
  Stream stream;
  ParameterSet set;
  set.add_parameter("fc.weight", {2, 2}, ParameterKind::linear_weight);
  set.add_counter("bn1.num_batches_tracked");
  EXPECT_NE(set.find("fc.weight"), nullptr);
  EXPECT_EQ(set.find("fc.bias"), nullptr);
  EXPECT_THROW(set.add_parameter("fc.weight", {2}, ParameterKind::bias), Error);
  EXPECT_THROW(set.add_buffer("bn1.num_batches_tracked", {1}), Error);
  EXPECT_THROW(set.add_parameter("empty", {0}, ParameterKind::bias), Error);
  EXPECT_THROW(set.value(0), Error);  // before allocate()
  set.allocate(Device::cpu(), stream);
  EXPECT_THROW(set.add_parameter("late", {1}, ParameterKind::bias), Error);
  EXPECT_THROW(set.allocate(Device::cpu(), stream), Error);
  EXPECT_THROW(set.value(5), Error);
  try {
    set.add_buffer("late.running_var", {1});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'late.running_var' after allocate()"), std::string::npos)
        << e.what();
  }
}

TEST(ParameterSet, ZeroGradMakesTheNextBackwardOverwrite) {
  ParameterSet set;
  EXPECT_FALSE(set.grads_hold_values());
  set.mark_grads_written();
  EXPECT_TRUE(set.grads_hold_values());
  set.zero_grad();
  EXPECT_FALSE(set.grads_hold_values());
}

}  // namespace
}  // namespace engine::nn
