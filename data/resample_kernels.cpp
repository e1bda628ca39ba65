#include "data/resample_kernels.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ENGINE_DATA_HAVE_SSE41_KERNEL 1
#else
#define ENGINE_DATA_HAVE_SSE41_KERNEL 0
#endif

// The vertical loop auto-vectorizes; an AVX2 clone of it is picked at load time on CPUs that
// have AVX2 while the build targets baseline x86-64. Not under sanitizers: their instrumented
// ifunc resolver would run before the sanitizer runtime is initialized.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define ENGINE_DATA_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#else
#define ENGINE_DATA_AVX2_CLONE
#endif

namespace engine::data::resample_kernels {

namespace {

constexpr int32_t kRoundingHalf = 1 << (kResamplePrecisionBits - 1);

uint8_t clip_fixed_point(int32_t sum) {
  return static_cast<uint8_t>(std::clamp(sum >> kResamplePrecisionBits, 0, 255));
}

// Scalar, any tap count: output pixel x reads count[x] pixels from first[x].
ENGINE_DATA_AVX2_CLONE void horizontal_scalar(const ResampleAxis& axis, bool fixed_taps,
                                              const RgbView& source, int y, uint8_t* out_row) {
  const uint8_t* in = source.row(y);
  const int out_width = static_cast<int>(axis.first.size());
  for (int x = 0; x < out_width; ++x) {
    const int32_t* k = &axis.weights[static_cast<size_t>(x) * axis.taps];
    const uint8_t* pixel = in + static_cast<size_t>(axis.first[x]) * 3;
    const int count = fixed_taps ? axis.taps : axis.count[x];
    int32_t sums[3] = {kRoundingHalf, kRoundingHalf, kRoundingHalf};
    for (int t = 0; t < count; ++t) {
      for (int c = 0; c < 3; ++c)
        sums[c] += pixel[t * 3 + c] * k[t];
    }
    for (int c = 0; c < 3; ++c)
      out_row[x * 3 + c] = clip_fixed_point(sums[c]);
  }
}

#if ENGINE_DATA_HAVE_SSE41_KERNEL
// One output pixel per iteration: its R, G, B (and a fourth, ignored byte) in four int32 lanes,
// one multiply-add per tap. Each tap loads 4 bytes for its 3, so the caller keeps the last row
// of a buffer on the scalar path.
template <int kTaps>
__attribute__((target("sse4.1"))) void horizontal_sse41(const ResampleAxis& axis,
                                                        const RgbView& source, int y,
                                                        uint8_t* out_row) {
  const uint8_t* in = source.row(y);
  const int out_width = static_cast<int>(axis.first.size());
  const __m128i half = _mm_set1_epi32(kRoundingHalf);
  for (int x = 0; x < out_width; ++x) {
    const int32_t* k = &axis.weights[static_cast<size_t>(x) * kTaps];
    const uint8_t* pixel = in + static_cast<size_t>(axis.first[x]) * 3;
    __m128i sum = half;
    for (int t = 0; t < kTaps; ++t) {
      int32_t bytes;
      std::memcpy(&bytes, pixel + t * 3, 4);
      const __m128i values = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(bytes));
      sum = _mm_add_epi32(sum, _mm_mullo_epi32(values, _mm_set1_epi32(k[t])));
    }
    // >> 22, then saturate to 0..255 as clip_fixed_point does.
    const __m128i shifted = _mm_srai_epi32(sum, kResamplePrecisionBits);
    const __m128i packed = _mm_packus_epi16(_mm_packs_epi32(shifted, shifted), shifted);
    const auto rgbx = static_cast<uint32_t>(_mm_cvtsi128_si32(packed));
    std::memcpy(out_row + x * 3, &rgbx, 3);
  }
}

bool cpu_has_sse41() {
  static const bool has = __builtin_cpu_supports("sse4.1") != 0;
  return has;
}

using RowKernel = void (*)(const ResampleAxis&, const RgbView&, int, uint8_t*);

RowKernel sse41_kernel(int taps) {
  switch (taps) {
    case 3:
      return horizontal_sse41<3>;
    case 5:
      return horizontal_sse41<5>;
    case 7:
      return horizontal_sse41<7>;
    case 9:
      return horizontal_sse41<9>;
    case 11:
      return horizontal_sse41<11>;
    case 13:
      return horizontal_sse41<13>;
    default:
      return nullptr;
  }
}
#endif

}  // namespace

void horizontal(const ResampleAxis& axis, bool fixed_taps, const RgbView& source, int row_begin,
                int row_end, uint8_t* out, size_t out_stride) {
#if ENGINE_DATA_HAVE_SSE41_KERNEL
  const RowKernel fast = fixed_taps && cpu_has_sse41() ? sse41_kernel(axis.taps) : nullptr;
#endif
  for (int y = row_begin; y < row_end; ++y) {
    uint8_t* out_row = out + static_cast<size_t>(y - row_begin) * out_stride;
#if ENGINE_DATA_HAVE_SSE41_KERNEL
    if (fast != nullptr && y + 1 < source.height) {
      fast(axis, source, y, out_row);
      continue;
    }
#endif
    horizontal_scalar(axis, fixed_taps, source, y, out_row);
  }
}

// Row at a time, so the inner loop runs over contiguous bytes and vectorizes.
ENGINE_DATA_AVX2_CLONE void vertical(const ResampleAxis& axis, const RgbView& rows, int out_width,
                                     uint8_t* out, size_t out_stride,
                                     std::vector<int32_t>& accumulator) {
  const size_t row_bytes = static_cast<size_t>(out_width) * 3;
  accumulator.resize(row_bytes);
  int32_t* acc = accumulator.data();
  const int out_height = static_cast<int>(axis.first.size());
  for (int y = 0; y < out_height; ++y) {
    std::fill(acc, acc + row_bytes, kRoundingHalf);
    const int32_t* k = &axis.weights[static_cast<size_t>(y) * axis.taps];
    for (int t = 0; t < axis.count[y]; ++t) {
      const uint8_t* in = rows.row(axis.first[y] + t);
      const int32_t weight = k[t];
      for (size_t j = 0; j < row_bytes; ++j)
        acc[j] += in[j] * weight;
    }
    uint8_t* out_row = out + static_cast<size_t>(y) * out_stride;
    for (size_t j = 0; j < row_bytes; ++j)
      out_row[j] = clip_fixed_point(acc[j]);
  }
}

}  // namespace engine::data::resample_kernels
