#include "data/random_erasing.h"

#include <cmath>
#include <vector>

#include "kernels/bfloat16.h"
#include "kernels/error.h"

namespace engine::data {

namespace {

// Python's round() to an int: nearest, ties to even.
int python_round(double value) {
  return static_cast<int>(std::nearbyint(value));
}

template <typename T>
void fill_box(const ErasedBox& box, int width, const std::vector<float>& normals, T* values) {
  const size_t plane = static_cast<size_t>(box.height) * box.width;
  for (int y = 0; y < box.height; ++y) {
    T* row = values + (static_cast<size_t>(box.top + y) * width + box.left) * 3;
    for (int x = 0; x < box.width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const float v =
            normals.empty() ? 0.0f : normals[c * plane + static_cast<size_t>(y) * box.width + x];
        row[x * 3 + c] = T(v);
      }
    }
  }
}

}  // namespace

ErasedBox random_erasing(const RandomErasingOptions& options, int width, int height, DType dtype,
                         void* values, RandomSource& random) {
  ErasedBox box;
  if (options.probability <= 0) return box;
  ENGINE_REQUIRE(dtype == DType::f32 || dtype == DType::bf16,
                 "random_erasing: samples are f32 or bf16");
  // torch.rand(1) < p compares in float32 (a Python float does not promote the tensor).
  if (!(random.uniform(0.0, 1.0) < static_cast<float>(options.probability))) return box;
  const double area = static_cast<double>(height) * width;
  // torch.log(torch.tensor(ratio)) is float32; the draws are float32 tensors.
  const float log_ratio_min = std::log(static_cast<float>(options.ratio_min));
  const float log_ratio_max = std::log(static_cast<float>(options.ratio_max));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area = area * random.uniform(options.scale_min, options.scale_max);
    const double aspect_ratio = std::exp(random.uniform(log_ratio_min, log_ratio_max));
    const int h = python_round(std::sqrt(erase_area * aspect_ratio));
    const int w = python_round(std::sqrt(erase_area / aspect_ratio));
    if (!(h < height && w < width)) continue;
    std::vector<float> normals;
    if (options.random_values) {
      normals.resize(static_cast<size_t>(3) * h * w);
      for (float& v : normals)
        v = random.normal();
    }
    box.erased = true;
    box.height = h;
    box.width = w;
    box.top = static_cast<int>(random.randint(0, height - h + 1));
    box.left = static_cast<int>(random.randint(0, width - w + 1));
    if (dtype == DType::f32) {
      fill_box(box, width, normals, static_cast<float*>(values));
    } else {
      fill_box(box, width, normals, static_cast<bf16*>(values));
    }
    return box;
  }
  return box;  // torchvision "erases" the whole image with itself: nothing changes
}

}  // namespace engine::data
