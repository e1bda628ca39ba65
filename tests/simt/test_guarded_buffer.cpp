// GuardedBuffer: the layout it promises (alignment, misalignment, canaries that are NaN) and
// the check after every launch: a write one element past either end fails the launch naming
// the kernel, the buffer and the byte offsets, once; writes inside the buffer never do.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "sim/simt/guarded_buffer.h"
#include "sim/simt/simt.h"

namespace {

// y[first .. first + count) = 1, one element per thread of a single block.
__global__ void write_range_kernel(float* y, int first, int count) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < count) y[first + i] = 1.f;
}

void write_range(simt::GuardedBuffer& buffer, int first, int count) {
  simt::launch(write_range_kernel, dim3(1), dim3(64), 0, nullptr,
               reinterpret_cast<float*>(buffer.data()), first, count);
}

std::string failure_of_write(simt::GuardedBuffer& buffer, int first, int count) {
  try {
    write_range(buffer, first, count);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(SimtGuardedBuffer, DataIsAlignedOrMisalignedAsAsked) {
  simt::GuardedBuffer aligned(12, 0, "aligned"), off_by_one(12, 4, "off by one");
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned.data()) % 16, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(off_by_one.data()) % 16, 4u);
  EXPECT_EQ(aligned.size(), 12u);
}

TEST(SimtGuardedBuffer, CanaryIsNanAsBf16AndF32AndDiffersBetweenBuffers) {
  simt::GuardedBuffer a(8, 0, "a"), b(8, 0, "b");
  EXPECT_NE(a.canary(), b.canary());
  for (const simt::GuardedBuffer* buffer : {&a, &b}) {
    const std::byte* tail = buffer->data() + buffer->size();
    std::uint16_t bf16_bits = 0;
    std::memcpy(&bf16_bits, tail, 2);
    EXPECT_EQ(bf16_bits, buffer->canary());
    EXPECT_EQ(bf16_bits & 0x7f80u, 0x7f80u) << "bf16 exponent all ones";
    EXPECT_NE(bf16_bits & 0x007fu, 0u) << "bf16 mantissa non-zero";
    float f32 = 0.f;
    std::memcpy(&f32, tail, 4);
    EXPECT_TRUE(std::isnan(f32));
    std::memcpy(&f32, buffer->data() - 4, 4);
    EXPECT_TRUE(std::isnan(f32)) << "leading guard";
  }
}

TEST(SimtGuardedBuffer, WritesInsideTheBufferPass) {
  simt::GuardedBuffer buffer(3 * sizeof(float), 4, "three floats");
  write_range(buffer, 0, 3);
  float values[3];
  std::memcpy(values, buffer.data(), sizeof values);
  EXPECT_EQ(values[0], 1.f);
  EXPECT_EQ(values[2], 1.f);
}

TEST(SimtGuardedBuffer, OneElementPastTheEndFailsTheLaunchOnce) {
  // 12 bytes: the overrun lands in what a 16-byte rounding of the size would have hidden.
  simt::GuardedBuffer buffer(3 * sizeof(float), 0, "three floats");
  const std::string message = failure_of_write(buffer, 0, 4);
  EXPECT_NE(message.find("write_range_kernel"), std::string::npos) << message;
  EXPECT_NE(message.find("three floats"), std::string::npos) << message;
  EXPECT_NE(message.find("bytes [12, 15]"), std::string::npos) << message;
  EXPECT_NE(message.find("after the 12 data bytes"), std::string::npos) << message;
  // Reported once: the guards are re-armed.
  EXPECT_EQ(failure_of_write(buffer, 0, 3), "");
}

TEST(SimtGuardedBuffer, OneElementBeforeTheStartFailsTheLaunch) {
  simt::GuardedBuffer buffer(3 * sizeof(float), 4, "misaligned");
  const std::string message = failure_of_write(buffer, -1, 2);
  EXPECT_NE(message.find("misaligned"), std::string::npos) << message;
  EXPECT_NE(message.find("bytes [-4, -1]"), std::string::npos) << message;
  EXPECT_NE(message.find("before the 12 data bytes"), std::string::npos) << message;
}

TEST(SimtGuardedBuffer, AFreedBufferIsNoLongerChecked) {
  auto* buffer = new simt::GuardedBuffer(4, 0, "freed");
  std::memset(buffer->data() + 4, 0, 4);  // host code overruns it, then frees it
  delete buffer;
  simt::GuardedBuffer live(4, 0, "live");
  EXPECT_EQ(failure_of_write(live, 0, 1), "");
}

}  // namespace
