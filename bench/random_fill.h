// Pseudo-random benchmark inputs on any device.
#pragma once

#include <cstdint>

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::bench {

// Fills `t` (a float dtype, contiguous, on any device) with values uniform in [-1, 1): a block
// of up to 2^20 values drawn on the host from `seed`, copied to t's device once and tiled over
// t by device copies, so filling a large activation costs little. Kernels are timed on such
// inputs rather than constants: tensor cores draw less power, and run faster, on zeros and
// repeated values (an 8192^3 bf16 product on an H200: 788 TFLOP/s on random values, 894 on
// zeros, as the device tool's notes record).
void fill_random(Tensor& t, Stream& stream, uint32_t seed);
// A new tensor of `shape` on the stream's device, filled so.
Tensor random_tensor(const Shape& shape, DType dtype, Stream& stream, uint32_t seed);

}  // namespace engine::bench
