// dtype names, and the host bf16 conversion against CUDA's own __float2bfloat16 (host path
// of cuda_bf16.h) over many bit patterns, so CPU and GPU round identically; f64 tensors
// (SyncBN's sums) hold doubles exactly and float ops refuse them.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "kernels/device.h"
#include "kernels/dtype.h"
#include "kernels/error.h"
#include "kernels/ops.h"
#include "kernels/runtime.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"
#if ENGINE_TEST_CUDA_HEADERS
#include <cuda_bf16.h>
#endif

namespace engine {
namespace {

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i32), 4u);
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_EQ(parse_dtype("i32"), DType::i32);
  EXPECT_EQ(parse_dtype("int32"), DType::i32);
  EXPECT_EQ(dtype_name(DType::f32), "f32");
  EXPECT_EQ(dtype_name(DType::bf16), "bf16");
  EXPECT_EQ(dtype_name(DType::i32), "i32");
  EXPECT_EQ(dtype_of<int32_t>(), DType::i32);
  EXPECT_EQ(dtype_size(DType::u8), 1u);
  EXPECT_EQ(parse_dtype("u8"), DType::u8);
  EXPECT_EQ(parse_dtype("uint8"), DType::u8);
  EXPECT_EQ(dtype_name(DType::u8), "u8");
  EXPECT_EQ(dtype_of<uint8_t>(), DType::u8);
  EXPECT_FALSE(is_float_dtype(DType::u8));
  EXPECT_THROW(parse_dtype("f16x"), Error);
  EXPECT_THROW(parse_dtype("int64"), Error);
}

TEST(DType, F64IsEightBytesAndNotAFloatDtype) {
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_EQ(dtype_name(DType::f64), "f64");
  EXPECT_EQ(dtype_of<double>(), DType::f64);
  for (const char* text : {"f64", "fp64", "float64"})
    EXPECT_EQ(parse_dtype(text), DType::f64) << text;
  // Float kernels dispatch on f32/bf16 only: an f64 buffer is refused, never read as f32.
  EXPECT_FALSE(is_float_dtype(DType::f64));
  int calls = 0;
  try {
    dispatch_dtype(DType::f64, [&]<typename T>() { ++calls; });
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "dispatch_dtype: f64 is not a float dtype (f32 or bf16)");
  }
  EXPECT_EQ(calls, 0);
}

TEST(DType, F64TensorsHoldDoublesExactly) {
  Stream stream;
  // Values no float holds: 1 + 2^-40 and a sum of squares of the size SyncBN sends.
  const std::vector<double> values = {1.0 + 0x1p-40, -3.0e15 + 0.5, 0.1, -0.0};
  Tensor t = Tensor::from_doubles({2, 2}, values);
  EXPECT_EQ(t.dtype(), DType::f64);
  EXPECT_EQ(t.nbytes(), 32u);
  EXPECT_EQ(t.describe(), "f64[2, 2] on cpu");
  EXPECT_EQ(t.to_doubles(stream), values);
  EXPECT_EQ(t.clone(stream).to_doubles(stream), values);
  EXPECT_EQ(t.to(Device::cpu(), stream).to_doubles(stream), values);
  // Views step by 8 bytes.
  EXPECT_EQ(t.view(1, {2}).to_doubles(stream), (std::vector<double>{values[1], values[2]}));
  EXPECT_EQ(t.data<double>()[2], 0.1);
  EXPECT_THROW(t.data<float>(), Error);
  // to_floats rounds; from_floats widens exactly.
  EXPECT_EQ(t.to_floats(stream)[0], 1.f);
  EXPECT_EQ(Tensor::from_floats({2}, {0.1f, -2.f}, DType::f64).to_doubles(stream),
            (std::vector<double>{static_cast<double>(0.1f), -2.0}));
  EXPECT_THROW(Tensor::from_floats({2}, {1.f, 2.f}).to_doubles(stream), Error);
  EXPECT_THROW(Tensor::from_doubles({3}, {1.0}), Error);
  // zeros and fill take f64; copy moves it.
  Tensor zeros = Tensor::zeros({3}, DType::f64, Device::cpu(), stream);
  EXPECT_EQ(zeros.to_doubles(stream), (std::vector<double>{0, 0, 0}));
  fill(zeros, 0.25f, stream);
  EXPECT_EQ(zeros.to_doubles(stream), (std::vector<double>{0.25, 0.25, 0.25}));
  Tensor target = Tensor::empty({2, 2}, DType::f64);
  copy(t, target, stream);
  EXPECT_EQ(target.to_doubles(stream), values);
  // Float ops refuse it by name.
  Tensor f32 = Tensor::empty({3}, DType::f32);
  EXPECT_THROW(copy(zeros, f32, stream), Error);
  EXPECT_THROW(cast(zeros, f32, stream), Error);
  EXPECT_THROW(relu_forward(zeros, zeros, stream), Error);
}

#if ENGINE_TEST_CHECK_CUDA
TEST(DType, F64TensorsRoundTripThroughADevice) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  Stream stream(Device::cuda(0));
  const std::vector<double> values = {1.0 + 0x1p-40, -7.5, 3.0e300};
  Tensor gpu = Tensor::from_doubles({3}, values).to(Device::cuda(0), stream);
  EXPECT_EQ(gpu.to_doubles(stream), values);
  Tensor filled = Tensor::zeros({5}, DType::f64, Device::cuda(0), stream);
  fill(filled, -1.5f, stream);
  EXPECT_EQ(filled.to_doubles(stream), std::vector<double>(5, -1.5));
}
#endif

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(bf16(1.f).bits, 0x3f80);
  EXPECT_EQ(bf16(1.00390625f).bits, 0x3f80);                       // halfway, even below
  EXPECT_EQ(bf16(1.01171875f).bits, 0x3f82);                       // halfway, even above
  EXPECT_EQ(bf16(std::nextafter(1.00390625f, 2.f)).bits, 0x3f81);  // just above halfway
  EXPECT_EQ(bf16(-0.f).bits, 0x8000);
  EXPECT_EQ(bf16(INFINITY).bits, 0x7f80);
  EXPECT_EQ(bf16(3.4e38f).bits, 0x7f80);  // overflows to infinity
  EXPECT_EQ(bf16(NAN).bits, 0x7fff);
  EXPECT_EQ(static_cast<float>(bf16::from_bits(0x4049)), 3.140625f);
}

#if ENGINE_TEST_CUDA_HEADERS
TEST(Bf16, MatchesCudaConversionBitForBit) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t bits = rng();
    float value;
    std::memcpy(&value, &bits, 4);
    const __nv_bfloat16 reference = __float2bfloat16(value);
    uint16_t reference_bits;
    std::memcpy(&reference_bits, &reference, 2);
    ASSERT_EQ(bf16(value).bits, reference_bits) << "input bits 0x" << std::hex << bits;
    ASSERT_EQ(std::bit_cast<uint32_t>(static_cast<float>(bf16::from_bits(reference_bits))),
              std::bit_cast<uint32_t>(__bfloat162float(reference)));
  }
}
#endif

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda"), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::cuda(2).str(), "cuda:2");
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:1x", ""}) {
    EXPECT_THROW(parse_device(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace engine
