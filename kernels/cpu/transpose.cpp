#include "kernels/cpu/transpose.h"

#include <algorithm>

#include "kernels/cpu/parallel.h"

namespace engine::cpu {

void transpose_into(const float* in, int64_t in_ld, int64_t rows, int64_t cols, float beta,
                    float* out, int64_t out_ld) {
  constexpr int64_t kBlock = 32;
  const int64_t row_blocks = (rows + kBlock - 1) / kBlock;
  const int64_t col_blocks = (cols + kBlock - 1) / kBlock;
  [[maybe_unused]] const bool parallel = rows * cols >= kParallelThreshold;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t job = 0; job < row_blocks * col_blocks; ++job) {
    const int64_t r0 = job / col_blocks * kBlock, c0 = job % col_blocks * kBlock;
    const int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
    for (int64_t r = r0; r < r1; ++r) {
      float* row = out + r * out_ld;
      for (int64_t c = c0; c < c1; ++c)
        row[c] = in[c * in_ld + r] + (beta == 0.f ? 0.f : row[c]);
    }
  }
}

void zero_columns(float* matrix, int64_t rows, int64_t ld, int64_t first, int64_t width) {
  for (int64_t row = 0; row < rows; ++row)
    std::fill_n(matrix + row * ld + first, width, 0.f);
}

}  // namespace engine::cpu
