#include "kernels/cpu/bf16_round.h"

#include "kernels/bfloat16.h"
#include "kernels/cpu/bf16_round_avx512.h"
#include "kernels/cpu/isa.h"

namespace engine::cpu {

__attribute__((target("avx512f,avx512bw,avx512vl"))) void round_to_bf16_avx512(const float* in,
                                                                               uint16_t* out,
                                                                               int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        round_to_bf16(_mm512_loadu_ps(in + i)));
  }
  if (i < n) {
    const __mmask16 rest = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(out + i, rest, round_to_bf16(_mm512_maskz_loadu_ps(rest, in + i)));
  }
}

void round_to_bf16_bits(const float* in, uint16_t* out, int64_t n) {
  if (use_avx512()) {
    round_to_bf16_avx512(in, out, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16(in[i]).bits;
}

}  // namespace engine::cpu
