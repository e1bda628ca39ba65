// dtype names, and the host bf16 conversion against CUDA's own __float2bfloat16 (host path
// of cuda_bf16.h) over many bit patterns, so CPU and GPU round identically.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "kernels/device.h"
#include "kernels/dtype.h"
#include "kernels/error.h"
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
  EXPECT_THROW(parse_dtype("f16x"), Error);
  EXPECT_THROW(parse_dtype("int64"), Error);
}

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
