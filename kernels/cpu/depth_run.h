// A product over part of a GEMM's depth, for the convolutions that skip the filter taps
// falling on the padding.
#pragma once

#include <cstdint>

namespace engine::cpu {

// A's depth columns [a_begin, a_begin + length) multiply B's rows [b_begin, b_begin + length):
// a product over some of B's rows only, such as the taps of a convolution that fall inside
// the image for a group of output pixels.
struct DepthRun {
  int64_t a_begin = 0, b_begin = 0, length = 0;
};

}  // namespace engine::cpu
