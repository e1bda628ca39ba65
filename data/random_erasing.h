// torchvision 0.14's RandomErasing(p, scale=(0.02, 0.33), ratio=(0.3, 3.3), value) on the
// normalized NHWC sample (after ToTensor + Normalize, in the output dtype), as the classification
// reference appends it. value is 0 or 'random' (a standard normal per value).
//
// Draws, in torchvision's order: the gate uniform (torch.rand(1) < p); then up to 10 attempts
// of a uniform area fraction and a uniform log aspect ratio; for the first box strictly inside
// the image, with 'random', 3 x h x w normals (channel-major, as torch fills [C, h, w]); then
// randint top and randint left. When no attempt fits, torchvision returns the image unchanged.
#pragma once

#include <cstdint>

#include "data/random.h"
#include "kernels/dtype.h"

namespace engine::data {

struct RandomErasingOptions {
  double probability = 0;  // 0: off, and no draws
  double scale_min = 0.02, scale_max = 0.33;
  double ratio_min = 0.3, ratio_max = 3.3;
  bool random_values = false;  // false: value 0
};

struct ErasedBox {
  bool erased = false;
  int top = 0, left = 0, height = 0, width = 0;
};

// Draws, and erases a box of the width x height x 3 NHWC sample `values` (f32 or bf16).
ErasedBox random_erasing(const RandomErasingOptions& options, int width, int height, DType dtype,
                         void* values, RandomSource& random);

}  // namespace engine::data
