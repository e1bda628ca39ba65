// The filter gradient of a convolution whose input channels are not a multiple of the tensor
// cores' 16-byte vector (kernels/conv_algo.h's ChannelPadding; the stem's 3 channels of RGB):
// x is copied with zero channels up to the vector's width, the gradient is the padded shape's,
// whose im2col rows load 16 bytes at a time, and the padded filter gradient is cut back to
// the real channels (the zero channels' columns are dropped; the real ones are the same
// products summed over the same pixels). Without it the gather loads x element by element:
// the stem's filter gradient took 5.1 ms on an H200 at batch 128 against cuDNN's 0.66
// (bench/results/gpu-check-h200-2026-12-04), about 37 instructions per HMMA.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/conv_algo.h"
#include "kernels/conv_shape.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gemm_choice.h"
#include "kernels/cuda/launch.h"

namespace engine::cuda {

// The environment's choice for ChannelPadding::automatic, read once: none unless
// ENGINE_FILTER_GRAD_PADDING=vector.
inline ChannelPadding environment_channel_padding() {
  static const ChannelPadding chosen = environment_choice<ChannelPadding>(
      "ENGINE_FILTER_GRAD_PADDING",
      {{"none", ChannelPadding::none}, {"vector", ChannelPadding::vector}}, "none");
  return chosen;
}

inline ChannelPadding resolve_channel_padding(ChannelPadding asked) {
  return asked == ChannelPadding::automatic ? environment_channel_padding() : asked;
}

// The channels a tensor-core engine of `vector` elements per 16 bytes reads x with: C rounded
// up to the vector when `asked` resolves to padding and C is not a multiple of it, else C.
inline int64_t padded_channels(int64_t channels, int vector, ChannelPadding asked) {
  if (resolve_channel_padding(asked) != ChannelPadding::vector || channels % vector == 0)
    return channels;
  return (channels + vector - 1) / vector * vector;
}

inline Conv2dShape with_input_channels(Conv2dShape shape, int64_t channels) {
  shape.in_channels = channels;
  return shape;
}

// x [pixels][channels] -> out [pixels][padded], the channels past x's zeros; padded a multiple
// of the 16-byte vector: a thread a pixel's vector, one 16-byte store each.
template <typename T>
__global__ void pad_channels_kernel(int64_t vectors, int32_t channels, int32_t padded, const T* x,
                                    T* out) {
  constexpr int kWidth = static_cast<int>(16 / sizeof(T));
  const int32_t per_pixel = padded / kWidth;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors;
       v += stride) {
    const int64_t pixel = v / per_pixel;
    const int32_t c0 = static_cast<int32_t>(v - pixel * per_pixel) * kWidth;
    Pack<T, kWidth> pack;
#pragma unroll
    for (int c = 0; c < kWidth; ++c)
      pack.v[c] = c0 + c < channels ? x[pixel * channels + c0 + c] : from_f32<T>(0.f);
    reinterpret_cast<Pack<T, kWidth>*>(out)[v] = pack;
  }
}

// dw [rows][channels] (= or += ) padded [rows][padded_channels]'s first `channels` columns,
// rows = filters x taps. A template (of the f32 master gradient only) so that every translation
// unit including conv.cuh may define it.
template <typename TGrad>
__global__ void unpad_filter_grad_kernel(int64_t count, int32_t channels, int32_t padded,
                                         const float* padded_dw, TGrad* dw, bool accumulate) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const int64_t row = i / channels, c = i - row * channels;
    const float value = padded_dw[row * padded + c];
    dw[i] = accumulate ? dw[i] + value : value;
  }
}

template <typename T>
void pad_channels_launch(int64_t pixels, int64_t channels, int64_t padded, const T* x, T* out,
                         cudaStream_t stream) {
  constexpr int64_t kWidth = 16 / sizeof(T);
  const int64_t vectors = pixels * (padded / kWidth);
  if (vectors == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((vectors + kThreads - 1) / kThreads, 8192);
  launch(pad_channels_kernel<T>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream,
         vectors, static_cast<int32_t>(channels), static_cast<int32_t>(padded), x, out);
}

inline void unpad_filter_grad_launch(int64_t rows, int64_t channels, int64_t padded,
                                     const float* padded_dw, float* dw, bool accumulate,
                                     cudaStream_t stream) {
  const int64_t count = rows * channels;
  if (count == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 4096);
  launch(unpad_filter_grad_kernel<float>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0,
         stream, count, static_cast<int32_t>(channels), static_cast<int32_t>(padded), padded_dw, dw,
         accumulate);
}

}  // namespace engine::cuda
