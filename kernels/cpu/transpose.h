// A blocked fp32 transpose, for the filter gradients computed as dW^T.
#pragma once

#include <cstdint>

namespace engine::cpu {

// out[r * out_ld + c] = in[c * in_ld + r] (+ out[r * out_ld + c] when beta is 1) for r < rows,
// c < cols: 32 x 32 blocks, so that reads and writes both stay within a few cache lines per
// block; parallel when large.
void transpose_into(const float* in, int64_t in_ld, int64_t rows, int64_t cols, float beta,
                    float* out, int64_t out_ld);

}  // namespace engine::cpu
