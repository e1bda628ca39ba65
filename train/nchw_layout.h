// The engine's activations are NHWC; PyTorch's are NCHW. The files train/ writes for PyTorch
// (--dump-batches, probe_step) hold NCHW, converted here.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace engine::train {

// [n, h, w, c] -> [n, c, h, w]
std::vector<float> nhwc_to_nchw(std::span<const float> nhwc, int64_t n, int64_t h, int64_t w,
                                int64_t c);
// [n, c, h, w] -> [n, h, w, c]
std::vector<float> nchw_to_nhwc(std::span<const float> nchw, int64_t n, int64_t c, int64_t h,
                                int64_t w);

}  // namespace engine::train
