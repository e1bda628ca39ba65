// The column-matrix chunks that the CPU convolution's passes share: whole images of im2col
// rows within a budget, and the rows that stay in a core's L2 while they are multiplied.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/conv_shape.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/scratch.h"

namespace engine::cpu {

// Column-matrix budget per chunk (floats): large enough for efficient GEMMs, small enough
// to stay in the last-level cache's neighbourhood instead of materializing the whole batch.
constexpr int64_t kColumnBudget = int64_t{1} << 21;

inline int64_t images_per_chunk(const Conv2dShape& shape) {
  const int64_t per_image = shape.out_h() * shape.out_w() * shape.gemm_k();
  return std::clamp<int64_t>(kColumnBudget / std::max<int64_t>(per_image, 1), 1, shape.batch);
}

// Calls fn(first_row, end_row, col) over chunks of whole images, col holding im2col(x) for
// output rows [first_row, end_row).
template <typename Fn>
void for_each_column_chunk(const Conv2dShape& shape, const float* x, Fn&& fn) {
  const int64_t rows_per_image = shape.out_h() * shape.out_w();
  const int64_t chunk_images = images_per_chunk(shape);
  const ScratchFloats col(chunk_images * rows_per_image * shape.gemm_k());
  for (int64_t image = 0; image < shape.batch; image += chunk_images) {
    const int64_t first = image * rows_per_image;
    const int64_t end = std::min(shape.batch, image + chunk_images) * rows_per_image;
    im2col(shape, x, first, end, col.data());
    fn(first, end, col.data());
  }
}

// Rows of a column chunk that should stay in a core's L2 while it is multiplied: about
// 256 KiB of columns, but at least one 240-row block of the AVX-512 GEMM (MC in
// kernels/cpu/sgemm_avx512.cpp), so the B panels are not streamed for a few rows.
inline int64_t l2_chunk_rows(int64_t k) {
  return std::max<int64_t>(240, (int64_t{1} << 16) / k);
}

}  // namespace engine::cpu
