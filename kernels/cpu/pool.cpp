#include "kernels/cpu/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace engine::cpu {
namespace {

int64_t pooled_size(int64_t in, int kernel, int stride, int padding) {
  return (in + 2 * padding - kernel) / stride + 1;
}

}  // namespace

void maxpool2d_forward(DType dtype, const void* x, void* y, float* argmax, int64_t n, int64_t h,
                       int64_t w, int64_t c, int kernel, int stride, int padding) {
  const int64_t out_h = pooled_size(h, kernel, stride, padding);
  const int64_t out_w = pooled_size(w, kernel, stride, padding);
  dispatch_dtype(dtype, [&]<typename T>() {
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    // One output pixel per iteration; channels innermost, so every load is contiguous.
    parallel_for(n * out_h * out_w, [&](int64_t pixel) {
      const int64_t image = pixel / (out_h * out_w);
      const int64_t oh = pixel / out_w % out_h, ow = pixel % out_w;
      const int64_t h0 = oh * stride - padding, w0 = ow * stride - padding;
      const int64_t h_begin = std::max<int64_t>(h0, 0), h_end = std::min(h0 + kernel, h);
      const int64_t w_begin = std::max<int64_t>(w0, 0), w_end = std::min(w0 + kernel, w);
      std::vector<float> best(c, -std::numeric_limits<float>::infinity());
      // As PyTorch: the index starts at the window's first valid position, and a value wins
      // when it is greater or NaN.
      std::vector<float> index(c, static_cast<float>(h_begin * w + w_begin));
      for (int64_t ih = h_begin; ih < h_end; ++ih) {
        for (int64_t iw = w_begin; iw < w_end; ++iw) {
          const T* row = in + ((image * h + ih) * w + iw) * c;
          const float position = static_cast<float>(ih * w + iw);
          for (int64_t ch = 0; ch < c; ++ch) {
            const float v = to_float(row[ch]);
            if (v > best[ch] || std::isnan(v)) {
              best[ch] = v;
              index[ch] = position;
            }
          }
        }
      }
      for (int64_t ch = 0; ch < c; ++ch) {
        out[pixel * c + ch] = from_float<T>(best[ch]);
        argmax[pixel * c + ch] = index[ch];
      }
    });
  });
}

void maxpool2d_backward(DType dtype, const void* dy, const float* argmax, void* dx, int64_t n,
                        int64_t h, int64_t w, int64_t c, int kernel, int stride, int padding) {
  const int64_t out_h = pooled_size(h, kernel, stride, padding);
  const int64_t out_w = pooled_size(w, kernel, stride, padding);
  dispatch_dtype(dtype, [&]<typename T>() {
    const T* grad_out = static_cast<const T*>(dy);
    T* grad_in = static_cast<T*>(dx);
    // Gather: each input pixel sums the outputs whose windows contain it and chose it, in
    // row-major output order (the CUDA kernel uses the same order).
    parallel_for(n * h * w, [&](int64_t pixel) {
      const int64_t image = pixel / (h * w);
      const int64_t ih = pixel / w % h, iw = pixel % w;
      const int64_t oh_begin = std::max<int64_t>(0, (ih + padding - kernel + stride) / stride);
      const int64_t oh_end = std::min(out_h, (ih + padding) / stride + 1);
      const int64_t ow_begin = std::max<int64_t>(0, (iw + padding - kernel + stride) / stride);
      const int64_t ow_end = std::min(out_w, (iw + padding) / stride + 1);
      const float position = static_cast<float>(ih * w + iw);
      std::vector<float> sum(c, 0.f);
      for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
        for (int64_t ow = ow_begin; ow < ow_end; ++ow) {
          const int64_t at = ((image * out_h + oh) * out_w + ow) * c;
          for (int64_t ch = 0; ch < c; ++ch)
            if (argmax[at + ch] == position) sum[ch] += to_float(grad_out[at + ch]);
        }
      }
      for (int64_t ch = 0; ch < c; ++ch)
        grad_in[pixel * c + ch] = from_float<T>(sum[ch]);
    });
  });
}

void global_avgpool_forward(DType dtype, const void* x, void* y, int64_t n, int64_t spatial,
                            int64_t c) {
  dispatch_dtype(dtype, [&]<typename T>() {
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    parallel_for(n, [&](int64_t image) {
      std::vector<float> sum(c, 0.f);
      for (int64_t s = 0; s < spatial; ++s) {
        const T* row = in + (image * spatial + s) * c;
        for (int64_t ch = 0; ch < c; ++ch)
          sum[ch] += to_float(row[ch]);
      }
      for (int64_t ch = 0; ch < c; ++ch)
        out[image * c + ch] = from_float<T>(sum[ch] / static_cast<float>(spatial));
    });
  });
}

void global_avgpool_backward(DType dtype, const void* dy, void* dx, int64_t n, int64_t spatial,
                             int64_t c) {
  dispatch_dtype(dtype, [&]<typename T>() {
    const T* grad_out = static_cast<const T*>(dy);
    T* grad_in = static_cast<T*>(dx);
    parallel_for(n * spatial * c, [&](int64_t i) {
      const int64_t image = i / (spatial * c);
      grad_in[i] =
          from_float<T>(to_float(grad_out[image * c + i % c]) / static_cast<float>(spatial));
    });
  });
}

}  // namespace engine::cpu
