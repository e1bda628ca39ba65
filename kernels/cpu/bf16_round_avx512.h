// The 16-lane core of round_to_bf16_avx512 (kernels/cpu/bf16_round.h), for kernels that round
// what they hold in registers. Include only from files that call it in AVX-512 functions.
#pragma once

#include <immintrin.h>

namespace engine::cpu {

// Rounds 16 floats to bf16 as bf16(float) does. (The maskz forms: GCC 12's plain shift and
// narrowing intrinsics pass an undefined operand that it then reports as uninitialized.)
__attribute__((target("avx512f"))) inline __m256i round_to_bf16(__m512 values) {
  constexpr __mmask16 kAll = 0xFFFF;
  const __m512i x = _mm512_castps_si512(values);
  const __m512i lsb = _mm512_and_si512(_mm512_maskz_srli_epi32(kAll, x, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_maskz_srli_epi32(
      kAll, _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  rounded = _mm512_mask_mov_epi32(rounded, nan, _mm512_set1_epi32(0x7fff));
  return _mm512_maskz_cvtepi32_epi16(kAll, rounded);
}

}  // namespace engine::cpu
