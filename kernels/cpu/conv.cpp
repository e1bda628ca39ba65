#include "kernels/cpu/conv.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/fp32_buffer.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/sgemm.h"

namespace engine::cpu {

namespace {

// Column-matrix budget per chunk (floats): large enough for efficient GEMMs, small enough
// to stay in the last-level cache's neighbourhood instead of materializing the whole batch.
constexpr int64_t kColumnBudget = int64_t{1} << 21;

int64_t images_per_chunk(const Conv2dShape& shape) {
  const int64_t per_image = shape.out_h() * shape.out_w() * shape.gemm_k();
  return std::clamp<int64_t>(kColumnBudget / std::max<int64_t>(per_image, 1), 1, shape.batch);
}

void add_bias(int64_t rows, int64_t channels, const float* bias, float* y) {
  parallel_for(rows, [&](int64_t m) {
    float* row = y + m * channels;
    for (int64_t k = 0; k < channels; ++k)
      row[k] += bias[k];
  });
}

// dbias[k] (+)= sum over rows of dy[m, k], in double for long batches.
void bias_gradient(int64_t rows, int64_t channels, const float* dy, float* dbias, bool accumulate) {
  std::vector<double> sums(static_cast<size_t>(channels), 0.0);
  for (int64_t m = 0; m < rows; ++m) {
    const float* row = dy + m * channels;
    for (int64_t k = 0; k < channels; ++k)
      sums[k] += row[k];
  }
  for (int64_t k = 0; k < channels; ++k) {
    dbias[k] = static_cast<float>(sums[k] + (accumulate ? dbias[k] : 0.0));
  }
}

}  // namespace

void conv2d_forward(const Conv2dShape& shape, DType dtype, const void* x, const void* w,
                    const float* bias, void* y) {
  const int64_t m = shape.gemm_m(), k = shape.gemm_k(), channels_out = shape.out_channels;
  const Fp32Input input(dtype, x, shape.batch * shape.in_h * shape.in_w * shape.in_channels);
  const Fp32Input filter(dtype, w, channels_out * k);
  Fp32Output output(dtype, y, m * channels_out, false);
  if (shape.is_pointwise()) {
    sgemm(false, true, m, channels_out, k, 1.f, input.data(), k, filter.data(), k, 0.f,
          output.data(), channels_out);
  } else {
    const int64_t rows_per_image = shape.out_h() * shape.out_w();
    const int64_t chunk_images = images_per_chunk(shape);
    std::vector<float> col(static_cast<size_t>(chunk_images * rows_per_image * k));
    for (int64_t image = 0; image < shape.batch; image += chunk_images) {
      const int64_t first = image * rows_per_image;
      const int64_t end = std::min(shape.batch, image + chunk_images) * rows_per_image;
      im2col(shape, input.data(), first, end, col.data());
      sgemm(false, true, end - first, channels_out, k, 1.f, col.data(), k, filter.data(), k, 0.f,
            output.data() + first * channels_out, channels_out);
    }
  }
  if (bias != nullptr) add_bias(m, channels_out, bias, output.data());
  output.commit();
}

void conv2d_backward_data(const Conv2dShape& shape, DType dtype, const void* dy, const void* w,
                          void* dx) {
  const int64_t m = shape.gemm_m(), k = shape.gemm_k(), channels_out = shape.out_channels;
  const Fp32Input grad_out(dtype, dy, m * channels_out);
  const Fp32Input filter(dtype, w, channels_out * k);
  Fp32Output grad_in(dtype, dx, shape.batch * shape.in_h * shape.in_w * shape.in_channels, false);
  if (shape.is_pointwise()) {
    sgemm(false, false, m, k, channels_out, 1.f, grad_out.data(), channels_out, filter.data(), k,
          0.f, grad_in.data(), k);
  } else {
    const int64_t rows_per_image = shape.out_h() * shape.out_w();
    const int64_t chunk_images = images_per_chunk(shape);
    std::vector<float> col(static_cast<size_t>(chunk_images * rows_per_image * k));
    for (int64_t image = 0; image < shape.batch; image += chunk_images) {
      const int64_t end_image = std::min(shape.batch, image + chunk_images);
      const int64_t first = image * rows_per_image, end = end_image * rows_per_image;
      sgemm(false, false, end - first, k, channels_out, 1.f, grad_out.data() + first * channels_out,
            channels_out, filter.data(), k, 0.f, col.data(), k);
      col2im(shape, col.data(), image, end_image, grad_in.data());
    }
  }
  grad_in.commit();
}

void conv2d_backward_filter(const Conv2dShape& shape, DType dtype, const void* x, const void* dy,
                            DType dw_dtype, void* dw, float* dbias, bool accumulate) {
  const int64_t m = shape.gemm_m(), k = shape.gemm_k(), channels_out = shape.out_channels;
  const Fp32Input input(dtype, x, shape.batch * shape.in_h * shape.in_w * shape.in_channels);
  const Fp32Input grad_out(dtype, dy, m * channels_out);
  Fp32Output grad_filter(dw_dtype, dw, channels_out * k, accumulate);
  const float first_beta = accumulate ? 1.f : 0.f;
  if (shape.is_pointwise()) {
    sgemm(true, false, channels_out, k, m, 1.f, grad_out.data(), channels_out, input.data(), k,
          first_beta, grad_filter.data(), k);
  } else {
    const int64_t rows_per_image = shape.out_h() * shape.out_w();
    const int64_t chunk_images = images_per_chunk(shape);
    std::vector<float> col(static_cast<size_t>(chunk_images * rows_per_image * k));
    for (int64_t image = 0; image < shape.batch; image += chunk_images) {
      const int64_t first = image * rows_per_image;
      const int64_t end = std::min(shape.batch, image + chunk_images) * rows_per_image;
      im2col(shape, input.data(), first, end, col.data());
      sgemm(true, false, channels_out, k, end - first, 1.f, grad_out.data() + first * channels_out,
            channels_out, col.data(), k, image == 0 ? first_beta : 1.f, grad_filter.data(), k);
    }
  }
  grad_filter.commit();
  if (dbias != nullptr) bias_gradient(m, channels_out, grad_out.data(), dbias, accumulate);
}

}  // namespace engine::cpu
