// Rounding fp32 to bf16 with AVX-512, bit for bit as bf16(float) (kernels/bfloat16.h): to
// nearest even, any NaN to 0x7FFF. Shared by the bf16 GEMM's stores and the f32 -> bf16 cast.
#pragma once

#include <cstdint>

namespace engine::cpu {

// out[i] = bf16(in[i]).bits for i < n. Requires cpu_has_avx512() (kernels/cpu/isa.h).
void round_to_bf16_avx512(const float* in, uint16_t* out, int64_t n);

// The same on one thread, by the AVX-512 loop where use_avx512() says so, else element by
// element: what the f32 -> bf16 cast runs, and the SGD step that writes a bf16 copy matches.
void round_to_bf16_bits(const float* in, uint16_t* out, int64_t n);

}  // namespace engine::cpu
