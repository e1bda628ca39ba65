// Rounding fp32 to bf16 with AVX-512, bit for bit as bf16(float) (kernels/bfloat16.h): to
// nearest even, any NaN to 0x7FFF. Shared by the bf16 GEMM's stores and the f32 -> bf16 cast.
#pragma once

#include <cstdint>

namespace engine::cpu {

// out[i] = bf16(in[i]).bits for i < n. Requires cpu_has_avx512() (kernels/cpu/isa.h).
void round_to_bf16_avx512(const float* in, uint16_t* out, int64_t n);

}  // namespace engine::cpu
