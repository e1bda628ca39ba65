// NHWC im2col and its adjoint, over a range of output rows (output pixels). Row m of the
// column matrix holds, for every filter tap (r, s), the in_channels values the tap reads —
// the same order as a KRSC filter row, so the GEMM needs no reordering.
#pragma once

#include <cstdint>

#include "kernels/bfloat16.h"
#include "kernels/conv_shape.h"
#include "kernels/cpu/tap_classes.h"

namespace engine::cpu {

// col[(m - first_row) * gemm_k + (r * kernel_w + s) * in_channels + c] for m in
// [first_row, end_row); taps outside the image (padding) are 0. T is float or bf16.
template <typename T>
void im2col(const Conv2dShape& shape, const T* x, int64_t first_row, int64_t end_row, T* col);

// The column rows of `count` output pixels of one tap class, its taps only: row i of col is,
// for output row rows[i], the depth(shape) values its taps inside the input read, in KRSC
// order of those taps (tap (r, s) at ((r - taps.rows.begin) * taps.cols.count() + s -
// taps.cols.begin) * in_channels). T is float or bf16 (a copy: no arithmetic).
template <typename T>
void im2col_inside(const Conv2dShape& shape, const TapClass& taps, const T* x, const int64_t* rows,
                   int64_t count, T* col);

// The adjoint for whole images [first_image, end_image): dx[n, h, w, c] = sum over the
// (p, q, r, s) that read (h, w) of col[...]; overwrites those images of dx. Gathers per
// input pixel, so the images can be processed in parallel without write races.
void col2im(const Conv2dShape& shape, const float* col, int64_t first_image, int64_t end_image,
            float* dx);

}  // namespace engine::cpu
