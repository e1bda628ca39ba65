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
// argmax is a window position in one byte. The window of the Tensor API (kernels/ops/pool.h),
// of the layers and of the tests; the kernels take it inside MaxPool2dGeometry.
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

// One max pooling's geometry: the input [n, h, w, c], the window, and the output
// [n, out_h, out_w, c] that follows from them. The one parameters struct of the max-pooling
// kernels: the CPU loops (kernels/cpu/pool.cpp) and the CUDA kernels (kernels/cuda/maxpool.cuh)
// take it by value, as CUTLASS kernels take their Params. Extents are listed in NHWC order
// (n, h, w, c) everywhere: fields, make()'s arguments, and what is derived from them. One
// image's extents are 32-bit (the CUDA kernels index within an image in 32 bits; the op refuses
// larger ones), the batch n is not. Build it with make(), so out_h and out_w agree.
struct MaxPool2dGeometry {
  int64_t n = 0;
  int32_t h = 0;
  int32_t w = 0;
  int32_t c = 0;
  int32_t out_h = 0;  // window.output_size(h): 0 when the window does not fit
  int32_t out_w = 0;
  MaxPool2dParams window;

  static MaxPool2dGeometry make(const MaxPool2dParams& window, int64_t n, int64_t h, int64_t w,
                                int64_t c) {
    return {.n = n,
            .h = static_cast<int32_t>(h),
            .w = static_cast<int32_t>(w),
            .c = static_cast<int32_t>(c),
            .out_h = static_cast<int32_t>(window.output_size(h)),
            .out_w = static_cast<int32_t>(window.output_size(w)),
            .window = window};
  }
  // Elements of one image of the input, h * w * c, and of the output, out_h * out_w * c.
  int64_t image_numel() const { return int64_t{h} * w * c; }
  int64_t out_image_numel() const { return int64_t{out_h} * out_w * c; }
};

struct MaxPool2dForwardArgs {
  DType dtype = DType::f32;
  const void* x = nullptr;
  void* y = nullptr;
  // [n, out_h, out_w, c]: each maximum's position in its window, row * kernel + col, counted
  // from the window's corner at (oh * stride - padding, ow * stride - padding), padding
  // included (a maximum is never in the padding, so a clipped window's codes skip some).
  uint8_t* argmax = nullptr;
  MaxPool2dGeometry geometry;
};

struct MaxPool2dBackwardArgs {
  DType dtype = DType::f32;
  const void* dy = nullptr;
  const uint8_t* argmax = nullptr;
  void* dx = nullptr;  // every element written: no zero fill needed
  MaxPool2dGeometry geometry;
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
