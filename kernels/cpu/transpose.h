// A blocked fp32 transpose, for the filter gradients computed as dW^T, and the zeroing of dW's
// columns that no product writes.
#pragma once

#include <cstdint>

namespace engine::cpu {

// out[r * out_ld + c] = in[c * in_ld + r] (+ out[r * out_ld + c] when beta is 1) for r < rows,
// c < cols: 32 x 32 blocks, so that reads and writes both stay within a few cache lines per
// block; parallel when large.
void transpose_into(const float* in, int64_t in_ld, int64_t rows, int64_t cols, float beta,
                    float* out, int64_t out_ld);

// Zeroes columns [first, first + width) of each of `rows` rows `ld` apart (the dW columns of
// filter taps that no output pixel reads inside the input), on the calling thread.
void zero_columns(float* matrix, int64_t rows, int64_t ld, int64_t first, int64_t width);

}  // namespace engine::cpu
