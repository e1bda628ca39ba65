// A 16 x 16 transpose of 32-bit values in AVX-512 registers, for the GEMMs' B packing.
#pragma once

#include <cstdint>

namespace engine::cpu {

// dst[p * dst_stride + i] = src[i * src_stride + p] for i, p < 16 (strides in floats; any
// 32-bit values, such as pairs of bf16). Requires cpu_has_avx512().
void transpose_16x16(const float* src, int64_t src_stride, float* dst, int64_t dst_stride);

}  // namespace engine::cpu
