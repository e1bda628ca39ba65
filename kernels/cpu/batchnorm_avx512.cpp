#include "kernels/cpu/batchnorm_avx512.h"

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/bf16_round_avx512.h"
#include "kernels/cpu/isa.h"

namespace engine::cpu {

namespace {
constexpr int64_t kLanes = 16;  // floats per zmm register
}  // namespace

bool batchnorm_avx512_applies(int64_t channels) {
  return use_avx512() && channels % kLanes == 0;
}

// Everything below is compiled for AVX-512F, lambdas included, and runs only when
// batchnorm_avx512_applies. It defines no inline entity visible outside this file (the helpers
// are in an anonymous namespace) and its templates are defined only here (the header declares
// them, the end of this file instantiates them), so no AVX-512 copy of a shared definition can
// be picked by the linker for the portable code.
#pragma GCC push_options
#pragma GCC target("avx512f")
// GCC notes that lambdas returning __m512 have an AVX-512 calling convention; they never
// leave this file.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace {

// Rows summed in fp32 before folding into fp64: short enough that fp32 loses nothing that
// matters (the values are centred), long enough that the fold costs little.
constexpr int64_t kBlockRows = 64;
// Rows in flight per loop iteration, each with its own accumulators, so the adds of
// consecutive rows do not wait on each other.
constexpr int kUnroll = 4;

// 16 activations as fp32 lanes, and back: bf16 widens exactly and rounds once on store.
__m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}
__m512 load16(const bf16* p) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, bits), 16));
}
void store16(float* p, __m512 v) {
  _mm512_storeu_ps(p, v);
}
void store16(bf16* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), round_to_bf16(v));
}

// acc[i] += lane i of v, in fp64 (once per 64 rows: a scalar loop costs nothing here).
void fold_into(double* acc, __m512 v) {
  alignas(64) float lanes[kLanes];
  _mm512_store_ps(lanes, v);
  for (int64_t i = 0; i < kLanes; ++i)
    acc[i] += lanes[i];
}

// For one group of 16 channels, over rows [begin, end): sum_a += sum of a(r) and
// sum_ab += sum of a(r) * b(r, a(r)), accumulated in fp32 per block of 64 rows and folded
// into the fp64 sums (16 each) after every block.
template <typename LoadA, typename Product>
void paired_sums(int64_t begin, int64_t end, LoadA load_a, Product product, double* sum_a,
                 double* sum_ab) {
  for (int64_t block = begin; block < end; block += kBlockRows) {
    const int64_t block_end = std::min(end, block + kBlockRows);
    __m512 acc_a[kUnroll], acc_ab[kUnroll];
    for (int u = 0; u < kUnroll; ++u)
      acc_a[u] = acc_ab[u] = _mm512_setzero_ps();
    int64_t r = block;
    for (; r + kUnroll <= block_end; r += kUnroll) {
      for (int u = 0; u < kUnroll; ++u) {
        const __m512 a = load_a(r + u);
        acc_a[u] = _mm512_add_ps(acc_a[u], a);
        acc_ab[u] = _mm512_fmadd_ps(a, product(r + u, a), acc_ab[u]);
      }
    }
    for (; r < block_end; ++r) {
      const __m512 a = load_a(r);
      acc_a[0] = _mm512_add_ps(acc_a[0], a);
      acc_ab[0] = _mm512_fmadd_ps(a, product(r, a), acc_ab[0]);
    }
    const __m512 total_a =
        _mm512_add_ps(_mm512_add_ps(acc_a[0], acc_a[1]), _mm512_add_ps(acc_a[2], acc_a[3]));
    const __m512 total_ab =
        _mm512_add_ps(_mm512_add_ps(acc_ab[0], acc_ab[1]), _mm512_add_ps(acc_ab[2], acc_ab[3]));
    fold_into(sum_a, total_a);
    fold_into(sum_ab, total_ab);
  }
}

// 16 gradients at a fused ReLU's output (dy and x at `at`, channels c0..c0+15), passed where
// its output y > 0 (relu_backward's rule); no ReLU: dy as it is.
template <typename T>
__m512 load16_through_relu(const T* dy, const BatchNormReluMask<T>& relu, const T* x, int64_t at,
                           int64_t c0) {
  const __m512 g = load16(dy + at);
  const __m512 zero = _mm512_setzero_ps();
  if (relu.output)
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(load16(relu.output + at), zero, _CMP_GT_OQ), g);
  if (relu.scale == nullptr) return g;
  const __m512 y = _mm512_fmadd_ps(load16(x + at), _mm512_loadu_ps(relu.scale + c0),
                                   _mm512_loadu_ps(relu.shift + c0));
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y, zero, _CMP_GT_OQ), g);
}

}  // namespace

template <typename T>
void batchnorm_shifted_sums_avx512(const T* x, int64_t begin, int64_t end, int64_t channels,
                                   const float* shift, double* s1, double* s2) {
  for (int64_t c0 = 0; c0 < channels; c0 += kLanes) {
    const __m512 shift_v = _mm512_loadu_ps(shift + c0);
    paired_sums(
        begin, end,
        [&](int64_t r) { return _mm512_sub_ps(load16(x + r * channels + c0), shift_v); },
        [](int64_t, __m512 d) { return d; }, s1 + c0, s2 + c0);
  }
}

template <typename T>
void batchnorm_affine_avx512(const T* x, const float* mean, const float* scale, const float* shift,
                             const T* residual, bool relu, T* y, int64_t begin, int64_t end,
                             int64_t channels) {
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t c0 = 0; c0 < channels; c0 += kLanes) {
      const int64_t at = r * channels + c0;
      __m512 v = _mm512_fmadd_ps(_mm512_sub_ps(load16(x + at), _mm512_loadu_ps(mean + c0)),
                                 _mm512_loadu_ps(scale + c0), _mm512_loadu_ps(shift + c0));
      if (residual) v = _mm512_add_ps(v, load16(residual + at));
      // Negative lanes to zero; NaN stays NaN, as in the portable loop.
      if (relu) v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero);
      store16(y + at, v);
    }
  }
}

template <typename T>
void batchnorm_backward_sums_avx512(const T* dy, const BatchNormReluMask<T>& relu, T* relu_grad,
                                    const T* x, const float* mean, int64_t begin, int64_t end,
                                    int64_t channels, double* sum_dy, double* sum_dy_xmu) {
  for (int64_t c0 = 0; c0 < channels; c0 += kLanes) {
    const __m512 mean_v = _mm512_loadu_ps(mean + c0);
    paired_sums(
        begin, end,
        [&](int64_t r) {
          const __m512 g = load16_through_relu(dy, relu, x, r * channels + c0, c0);
          if (relu_grad) store16(relu_grad + r * channels + c0, g);
          return g;
        },
        [&](int64_t r, __m512) { return _mm512_sub_ps(load16(x + r * channels + c0), mean_v); },
        sum_dy + c0, sum_dy_xmu + c0);
  }
}

template <typename T>
void batchnorm_backward_rows_avx512(const T* dy, const BatchNormReluMask<T>& relu, const T* x,
                                    const float* mean, const float* invstd, const float* scale,
                                    const float* mean_dy, const float* mean_dy_xhat, T* dx,
                                    int64_t begin, int64_t end, int64_t channels) {
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t c0 = 0; c0 < channels; c0 += kLanes) {
      const int64_t at = r * channels + c0;
      const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(load16(x + at), _mm512_loadu_ps(mean + c0)),
                                        _mm512_loadu_ps(invstd + c0));
      const __m512 centred =
          _mm512_sub_ps(load16_through_relu(dy, relu, x, at, c0), _mm512_loadu_ps(mean_dy + c0));
      store16(dx + at,
              _mm512_mul_ps(_mm512_loadu_ps(scale + c0),
                            _mm512_fnmadd_ps(xhat, _mm512_loadu_ps(mean_dy_xhat + c0), centred)));
    }
  }
}

#define ENGINE_BATCHNORM_AVX512_FOR(T)                                                            \
  template void batchnorm_shifted_sums_avx512(const T*, int64_t, int64_t, int64_t, const float*,  \
                                              double*, double*);                                  \
  template void batchnorm_affine_avx512(const T*, const float*, const float*, const float*,       \
                                        const T*, bool, T*, int64_t, int64_t, int64_t);           \
  template void batchnorm_backward_sums_avx512(const T*, const BatchNormReluMask<T>&, T*,         \
                                               const T*, const float*, int64_t, int64_t, int64_t, \
                                               double*, double*);                                 \
  template void batchnorm_backward_rows_avx512(                                                   \
      const T*, const BatchNormReluMask<T>&, const T*, const float*, const float*, const float*,  \
      const float*, const float*, T*, int64_t, int64_t, int64_t);
ENGINE_BATCHNORM_AVX512_FOR(float)
ENGINE_BATCHNORM_AVX512_FOR(bf16)
#undef ENGINE_BATCHNORM_AVX512_FOR

#pragma GCC diagnostic pop
#pragma GCC pop_options

}  // namespace engine::cpu
