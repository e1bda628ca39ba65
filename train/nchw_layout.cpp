#include "train/nchw_layout.h"

namespace engine::train {
namespace {

// Copies between the two layouts; kToNchw picks the direction.
template <bool kToNchw>
std::vector<float> convert(std::span<const float> from, int64_t n, int64_t c, int64_t h,
                           int64_t w) {
  std::vector<float> to(from.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch) {
          const auto nchw = static_cast<size_t>(((i * c + ch) * h + y) * w + x);
          const auto nhwc = static_cast<size_t>(((i * h + y) * w + x) * c + ch);
          if constexpr (kToNchw)
            to[nchw] = from[nhwc];
          else
            to[nhwc] = from[nchw];
        }
  return to;
}

}  // namespace

std::vector<float> nhwc_to_nchw(std::span<const float> nhwc, int64_t n, int64_t h, int64_t w,
                                int64_t c) {
  return convert<true>(nhwc, n, c, h, w);
}

std::vector<float> nchw_to_nhwc(std::span<const float> nchw, int64_t n, int64_t c, int64_t h,
                                int64_t w) {
  return convert<false>(nchw, n, c, h, w);
}

}  // namespace engine::train
