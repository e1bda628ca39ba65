// AVX-512 loops of the CPU BatchNorm, for f32 or bf16 activations whose channel count is a
// multiple of 16 (every BatchNorm of a ResNet); bf16 is widened to fp32 on load and rounded
// once on store, as the portable loops do. The library is compiled for baseline x86-64, where the
// portable loops (kernels/cpu/batchnorm.cpp) get 4-float SSE vectors. Here the two sums walk
// 16 channels at a time down a block of rows with the partial sums in registers, and the
// element-wise passes run along each row 16 floats at a time: walking channel groups down the
// rows there too would re-read rows from memory once the activation outgrows L3 (the stem's
// 25 MiB output).
// Callers split the rows and decide (batchnorm_avx512_applies) which loops run.
#pragma once

#include <cstdint>

#include "kernels/bfloat16.h"

namespace engine::cpu {

// use_avx512() and channels % 16 == 0.
bool batchnorm_avx512_applies(int64_t channels);

// The loops below for T = float and T = bf16 (explicitly instantiated in the .cpp).

// Over rows [begin, end) of x [rows, channels]: s1[c] += sum(x - shift[c]) and
// s2[c] += sum((x - shift[c])^2), in fp32 over blocks of 64 rows folded into the fp64 sums.
template <typename T>
void batchnorm_shifted_sums_avx512(const T* x, int64_t begin, int64_t end, int64_t channels,
                                   const float* shift, double* s1, double* s2);

// y = (x - mean[c]) * scale[c] + shift[c] (+ residual) (then max(0, .) when relu), over rows
// [begin, end). residual: or null.
template <typename T>
void batchnorm_affine_avx512(const T* x, const float* mean, const float* scale, const float* shift,
                             const T* residual, bool relu, T* y, int64_t begin, int64_t end,
                             int64_t channels);

// In the two backward loops, dy counts where a fused ReLU's output y > 0 and as 0 elsewhere
// (relu_backward's rule), without a pass of its own. y is read from `output`, or recomputed
// from x as conv_input_value(x, scale[c], shift[c], true) (a fused multiply-add, rounded once
// as std::fma is: the same bits); all null: no ReLU.
template <typename T>
struct BatchNormReluMask {
  const T* output = nullptr;
  const float* scale = nullptr;
  const float* shift = nullptr;
};

// Over rows [begin, end): sum_dy[c] += sum(dy) and sum_dy_xmu[c] += sum(dy * (x - mean[c])),
// in fp32 over blocks of 64 rows folded into the fp64 sums.
// relu_grad (or null, needs a ReLU) receives that gradient.
template <typename T>
void batchnorm_backward_sums_avx512(const T* dy, const BatchNormReluMask<T>& relu, T* relu_grad,
                                    const T* x, const float* mean, int64_t begin, int64_t end,
                                    int64_t channels, double* sum_dy, double* sum_dy_xmu);

// dx = scale[c] * (dy - mean_dy[c] - (x - mean[c]) * invstd[c] * mean_dy_xhat[c]) over rows
// [begin, end).
template <typename T>
void batchnorm_backward_rows_avx512(const T* dy, const BatchNormReluMask<T>& relu, const T* x,
                                    const float* mean, const float* invstd, const float* scale,
                                    const float* mean_dy, const float* mean_dy_xhat, T* dx,
                                    int64_t begin, int64_t end, int64_t channels);

}  // namespace engine::cpu
