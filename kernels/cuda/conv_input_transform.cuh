// A convolution's activation operand read through a per-channel transform (ConvInputTransform,
// kernels/args/conv.h): act(x * scale[c] + shift[c]), so that the BatchNorm-apply and ReLU of
// the layer before happen in this GEMM's operand loads and their output is never written.
// It wraps the operand that reads x (the forward's A, the filter gradient's B, im2col or
// pointwise) and keeps its Row/K cursors; the element path (TileLoader) transforms in
// load(), the cp.async path rewrites the landed vectors (gemm_operand_transform.cuh). Where the
// wrapped operand has no source (padding) the value stays 0.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/args/conv.h"
#include "kernels/conv_input_value.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/gemm_operands.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/fast_divmod.h"

namespace engine::cuda {

// A cursor with the input channel it is at.
template <typename Cursor>
struct WithChannel {
  Cursor cursor;
  int32_t channel;
};

// The coefficients of kVector consecutive channels, applied to one 16-byte vector in shared
// memory: read back, transformed in fp32, rounded to the element type, stored.
template <typename Element, int kVector>
struct VectorTransform {
  static_assert(sizeof(Element) * kVector == 16, "one 16-byte vector");
  float scale[kVector], shift[kVector];
  bool relu;
  __device__ __forceinline__ void apply(Element* vector) const {
    uint4 bits = *reinterpret_cast<const uint4*>(vector);
    Element values[kVector];
    std::memcpy(static_cast<void*>(values), &bits, sizeof bits);  // trivially copyable
#pragma unroll
    for (int j = 0; j < kVector; ++j)
      values[j] = from_f32<Element>(conv_input_value(to_f32(values[j]), scale[j], shift[j], relu));
    std::memcpy(&bits, values, sizeof bits);
    *reinterpret_cast<uint4*>(vector) = bits;
  }
};

// Base reads x (NHWC), channels innermost: the channel of an element is its index along the
// contiguous direction modulo C, i.e. k % C for the forward's A (k = tap * C + c; pointwise:
// k = c) and row % C for the filter gradient's B (rows (tap, c); pointwise: c). That index's
// cursor carries it, worked out once where the cursor is (per K tile, or per block for rows).
template <typename Base>
struct TransformedInput {
  using T = std::remove_cv_t<std::remove_pointer_t<decltype(std::declval<const Base&>().origin())>>;
  static constexpr bool kContiguousAlongK = Base::kContiguousAlongK;
  static constexpr bool kTransformsInput = true;
  using Row =
      std::conditional_t<kContiguousAlongK, typename Base::Row, WithChannel<typename Base::Row>>;
  using K = std::conditional_t<kContiguousAlongK, WithChannel<typename Base::K>, typename Base::K>;

  Base base;
  ConvInputTransform transform;
  FastDivmod by_channels;

  TransformedInput(const Base& base_, const ConvInputTransform& transform_, int64_t channels)
      : base(base_), transform(transform_), by_channels(static_cast<int32_t>(channels)) {}

  __device__ __forceinline__ int32_t channel_of(int32_t contiguous_index) const {
    int32_t quotient, channel;
    by_channels.divmod(contiguous_index, quotient, channel);
    return channel;
  }
  __device__ __forceinline__ int32_t row_channel(const Row& r) const {
    if constexpr (kContiguousAlongK) {
      return 0;  // not asked: along K the channel is k's
    } else {
      return r.channel;
    }
  }
  __device__ __forceinline__ Row row(int32_t r) const {
    if constexpr (kContiguousAlongK) {
      return base.row(r);
    } else {
      return {base.row(r), channel_of(r)};
    }
  }
  __device__ __forceinline__ K k(int32_t k_index) const {
    if constexpr (kContiguousAlongK) {
      return {base.k(k_index), channel_of(k_index)};
    } else {
      return base.k(k_index);
    }
  }
  __device__ __forceinline__ const T* vector_source(const Row& r, const K& k_cursor) const {
    if constexpr (kContiguousAlongK) {
      return base.vector_source(r, k_cursor.cursor);
    } else {
      return base.vector_source(r.cursor, k_cursor);
    }
  }
  // The element path: act(x * scale + shift) where x has a source, 0 in the padding.
  __device__ __forceinline__ T load(const Row& r, const K& k_cursor) const {
    const T* source = vector_source(r, k_cursor);
    if (source == nullptr) return from_f32<T>(0.f);
    int32_t channel;
    if constexpr (kContiguousAlongK) {
      channel = k_cursor.channel;
    } else {
      channel = r.channel;
    }
    return from_f32<T>(conv_input_value(to_f32(*source), transform.scale[channel],
                                        transform.shift[channel], transform.relu));
  }
  // The cp.async path's coefficients for channels [channel0, channel0 + kVector), read as
  // float4s (vectorizable: 16-byte aligned, channel0 a multiple of kVector).
  template <int kVector>
  __device__ __forceinline__ VectorTransform<T, kVector> vector_transform(int32_t channel0) const {
    VectorTransform<T, kVector> v;
#pragma unroll
    for (int j = 0; j < kVector; j += 4) {
      const float4 scale = *reinterpret_cast<const float4*>(transform.scale + channel0 + j);
      const float4 shift = *reinterpret_cast<const float4*>(transform.shift + channel0 + j);
      v.scale[j] = scale.x, v.scale[j + 1] = scale.y, v.scale[j + 2] = scale.z;
      v.scale[j + 3] = scale.w;
      v.shift[j] = shift.x, v.shift[j + 1] = shift.y, v.shift[j + 2] = shift.z;
      v.shift[j + 3] = shift.w;
    }
    v.relu = transform.relu;
    return v;
  }
  __device__ __forceinline__ const T* origin() const {
    return base.origin();
  }
  bool vectorizable(int width) const {
    const auto aligned = [](const float* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    return base.vectorizable(width) && by_channels.divisor() % width == 0 &&
           aligned(transform.scale) && aligned(transform.shift);
  }
};

template <typename Base>
TransformedInput(const Base&, const ConvInputTransform&, int64_t) -> TransformedInput<Base>;

// scale and shift from BatchNorm's batch statistics, weight and bias: a thread a channel.
// Launched by conv.cu's entry point alone (see conv.cuh's ENGINE_CONV_ENTRY_POINTS_ELSEWHERE).
#ifndef ENGINE_CONV_ENTRY_POINTS_ELSEWHERE
__global__ void conv_input_from_batchnorm_kernel(ConvInputFromBatchNormArgs args) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= args.channels) return;
  const ConvInputCoefficients k = conv_input_coefficients_at(args, c);
  args.scale[c] = k.scale;
  args.shift[c] = k.shift;
}
#endif

}  // namespace engine::cuda
