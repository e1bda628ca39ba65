// Tensor construction, views, typed access, copies and their errors (CPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

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

TEST(Tensor, IntegerTensorsHoldInt32) {
  Stream stream;
  const std::vector<int32_t> values = {0, -1, 7, 2147483647, -2147483647 - 1, 16777217};
  Tensor t = Tensor::from_ints({2, 3}, values);
  EXPECT_EQ(t.dtype(), DType::i32);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.describe(), "i32[2, 3] on cpu");
  EXPECT_EQ(t.data<int32_t>()[3], 2147483647);
  EXPECT_THROW(t.data<float>(), Error);
  EXPECT_THROW(Tensor::from_floats({1}, {1.f}).data<int32_t>(), Error);
  // Copies, views and clones move the bits; to_ints gives them back exactly.
  EXPECT_EQ(t.clone(stream).to_ints(stream), values);
  EXPECT_EQ(t.view(2, {2}).to_ints(stream), (std::vector<int32_t>{7, 2147483647}));
  // to_floats converts (exact below 2^24: 16777217 rounds to 16777216).
  EXPECT_EQ(t.to_floats(stream),
            (std::vector<float>{0.f, -1.f, 7.f, 2147483648.f, -2147483648.f, 16777216.f}));
  EXPECT_THROW(Tensor::from_floats({2}, {1, 2}).to_ints(stream), Error);
  EXPECT_THROW(Tensor::from_ints({3}, {1, 2}), Error);
  EXPECT_TRUE(Tensor::from_ints({0}, {}).to_ints(stream).empty());
}

TEST(Tensor, FloatConstructorsRefuseI32) {
  Stream stream;
  try {
    Tensor::from_floats({2}, {1.f, 2.f}, DType::i32);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("Tensor::from_floats: i32 is not a float dtype"),
              std::string::npos)
        << error.what();
  }
}

TEST(Tensor, ZerosOfEveryDtype) {
  // zeros is all-zero bytes (no op of kernels/ops.h behind it): 0 in every dtype, +0.0 in the
  // float ones.
  Stream stream;
  for (DType dtype : {DType::f32, DType::bf16, DType::f64, DType::i32, DType::u8}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor t = Tensor::zeros({3, 5}, dtype, Device::cpu(), stream);
    EXPECT_EQ(t.to_floats(stream), std::vector<float>(15, 0.f));
    const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
    EXPECT_TRUE(std::all_of(bytes, bytes + t.nbytes(), [](unsigned char b) { return b == 0; }));
  }
  EXPECT_EQ(Tensor::zeros({0}, DType::f32, Device::cpu(), stream).numel(), 0);
  if (cuda_device_count() == 0) return;
  // On a CUDA device (the sim device in CI): queued on the device's stream, refused on another.
  Stream cuda_stream(Device::cuda(0));
  for (DType dtype : {DType::f32, DType::bf16, DType::i32, DType::u8}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor t = Tensor::zeros({3, 5}, dtype, Device::cuda(0), cuda_stream);
    EXPECT_EQ(t.to_floats(cuda_stream), std::vector<float>(15, 0.f));
  }
  EXPECT_THROW(Tensor::zeros({2}, DType::f32, Device::cuda(0), stream), Error);
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

// 1 TiB is more than any GPU holds (and than the sim device's configured capacity): the
// allocation fails, after the caching allocator released its cache, with one message that
// names the device, the size and what the device has free.
TEST(Tensor, CudaOutOfMemoryIsAClearErrorNamingTheDeviceAndWhatIsFree) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  const int64_t elements = int64_t{1} << 38;  // 1 TiB of f32
  try {
    Tensor::empty({elements}, DType::f32, Device::cuda(0));
    FAIL() << "expected an out-of-memory error";
  } catch (const OutOfMemoryError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("CUDA out of memory on cuda:0 allocating 1099511627776 bytes"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find(" MiB free of "), std::string::npos) << what;
  }
  // The device is still usable afterwards: the error is not sticky.
  Stream stream(Device::cuda(0));
  Tensor small = Tensor::zeros({4}, DType::f32, Device::cuda(0), stream);
  EXPECT_EQ(small.to_floats(stream), std::vector<float>(4, 0.0f));
}

}  // namespace
}  // namespace engine
