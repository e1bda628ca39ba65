// Tensor construction, views, typed access, copies and their errors (CPU).
#include <gtest/gtest.h>

#include "kernels/ops.h"
#include "kernels/runtime.h"
#include "kernels/tensor.h"

namespace engine {
namespace {

TEST(Tensor, EmptyHasShapeSizeAndAlignedStorage) {
  Tensor t = Tensor::empty({2, 3, 5, 7}, DType::bf16);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.numel(), 210);
  EXPECT_EQ(t.nbytes(), 420u);
  EXPECT_EQ(t.dim(), 4);
  EXPECT_EQ(t.size(-1), 7);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  EXPECT_EQ(t.describe(), "bf16[2, 3, 5, 7] on cpu");
  EXPECT_THROW(t.size(4), Error);
  EXPECT_FALSE(Tensor().defined());
}

TEST(Tensor, ZeroSizedTensorsAreValid) {
  Stream stream;
  Tensor t = Tensor::zeros({0, 4}, DType::f32, Device::cpu(), stream);
  EXPECT_EQ(t.numel(), 0);
  EXPECT_TRUE(t.to_floats(stream).empty());
  EXPECT_THROW(Tensor::empty({-1}, DType::f32), Error);
}

TEST(Tensor, TypedAccessChecksTheDtype) {
  Tensor t = Tensor::from_floats({3}, {1.f, -2.f, 3.5f}, DType::f32);
  EXPECT_EQ(t.data<float>()[1], -2.f);
  EXPECT_THROW(t.data<bf16>(), Error);
}

TEST(Tensor, ReshapeSharesStorageAndCloneCopies) {
  Stream stream;
  Tensor t = Tensor::from_floats({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor view = t.reshape({3, 2});
  Tensor copy_of_t = t.clone(stream);
  view.data<float>()[5] = 50.f;
  EXPECT_EQ(t.data<float>()[5], 50.f);
  EXPECT_EQ(copy_of_t.data<float>()[5], 5.f);
  EXPECT_THROW(t.reshape({4}), Error);
}

TEST(Tensor, ViewsShareARangeOfTheStorage) {
  Stream stream;
  Tensor flat = Tensor::from_floats({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor middle = flat.view(2, {2, 3});
  EXPECT_EQ(middle.shape(), (Shape{2, 3}));
  EXPECT_EQ(middle.to_floats(stream), (std::vector<float>{2, 3, 4, 5, 6, 7}));
  middle.data<float>()[0] = 42;  // writes through to the flat buffer
  EXPECT_EQ(flat.to_floats(stream)[2], 42);
  // A view of a view is bounded by its parent; empty views at either end are fine.
  EXPECT_EQ(middle.view(4, {2}).to_floats(stream), (std::vector<float>{6, 7}));
  EXPECT_EQ(flat.view(10, {0}).numel(), 0);
  EXPECT_THROW(middle.view(5, {2}), Error);
  EXPECT_THROW(flat.view(-1, {1}), Error);
  EXPECT_THROW(flat.view(0, {11}), Error);
  EXPECT_THROW(Tensor().view(0, {1}), Error);
  // The storage outlives the flat tensor while a view holds it.
  Tensor survivor = Tensor::from_floats({4}, {1, 2, 3, 4}).view(1, {3});
  EXPECT_EQ(survivor.to_floats(stream), (std::vector<float>{2, 3, 4}));
}

TEST(Tensor, FromFloatsRoundsToBf16) {
  Stream stream;
  Tensor t = Tensor::from_floats({2}, {1.00390625f, 3.14159f}, DType::bf16);
  EXPECT_EQ(t.to_floats(stream), (std::vector<float>{1.f, 3.140625f}));
  EXPECT_THROW(Tensor::from_floats({3}, {1.f}), Error);
}

TEST(Tensor, CudaTensorsAreAClearErrorWithoutADevice) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this process has a CUDA device";
  try {
    Tensor::empty({4}, DType::f32, Device::cuda(0));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("cuda:0 is not available"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(Stream(Device::cuda(0)), Error);
}

}  // namespace
}  // namespace engine
