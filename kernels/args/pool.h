// Arguments of the pooling entry points, one struct per entry point, shared by the dispatcher
// (kernels/ops/pool.cpp), the CPU twin (kernels/cpu/pool.h) and the CUDA launcher
// (kernels/cuda/pool.h); see kernels/args/batchnorm.h for why. Activations are NHWC of dtype
// (device pointers on CUDA); argmax is u8 (kernels/ops/pool.h).
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace engine {

// torch.nn.MaxPool2d(kernel, stride, padding) with dilation 1 and ceil_mode=False: padding
// never wins (it is -inf), so 2 * padding <= kernel as PyTorch requires. kernel <= 16: the
// argmax is a window position in one byte.
struct MaxPool2dParams {
  static constexpr int kMaxKernel = 16;  // kernel * kernel positions, codes 0..255: a byte

  int kernel = 3;
  int stride = 2;
  int padding = 1;
  // floor((in + 2 * padding - kernel) / stride) + 1, or 0 when the window does not fit.
  int64_t output_size(int64_t in) const {
    const int64_t span = in + 2 * padding - kernel;
    return span < 0 ? 0 : span / stride + 1;
  }
};

// Max pooling's input [n, h, w, c] and window; the output is [n, out_h, out_w, c].
struct MaxPool2dWindow {
  int64_t n = 0;
  int64_t h = 0;
  int64_t w = 0;
  int64_t c = 0;
  MaxPool2dParams params;

  int64_t out_h() const { return params.output_size(h); }
  int64_t out_w() const { return params.output_size(w); }
};

struct MaxPool2dForwardArgs {
  DType dtype = DType::f32;
  const void* x = nullptr;
  void* y = nullptr;
  // [n, out_h, out_w, c]: each maximum's position in its window, row * kernel + col, counted
  // from the window's corner at (oh * stride - padding, ow * stride - padding), padding
  // included (a maximum is never in the padding, so a clipped window's codes skip some).
  uint8_t* argmax = nullptr;
  MaxPool2dWindow window;
};

struct MaxPool2dBackwardArgs {
  DType dtype = DType::f32;
  const void* dy = nullptr;
  const uint8_t* argmax = nullptr;
  void* dx = nullptr;  // every element written: no zero fill needed
  MaxPool2dWindow window;
};

// x [n, spatial, c] -> y [n, c], spatial = H * W.
struct GlobalAvgPoolForwardArgs {
  DType dtype = DType::f32;
  const void* x = nullptr;
  void* y = nullptr;
  int64_t n = 0;
  int64_t spatial = 0;
  int64_t c = 0;
};

struct GlobalAvgPoolBackwardArgs {
  DType dtype = DType::f32;
  const void* dy = nullptr;  // [n, c]
  void* dx = nullptr;        // [n, spatial, c]
  int64_t n = 0;
  int64_t spatial = 0;
  int64_t c = 0;
};

}  // namespace engine
