// Operands that are transformed as they load (conv_input_transform.cuh: the BatchNorm-apply and
// ReLU of the layer before, in a convolution's activation operand), on the cp.async path.
//
// 16-byte cp.async vectors never pass through registers, so the transform is a rewrite in
// shared memory: each thread, once its own copies of a K tile have landed (cp_async_wait) and
// before the barrier that publishes the tile, reads back the vectors it issued, transforms them
// and stores them again. Every element is transformed exactly once, by the thread that copied
// it, with no extra barrier. (Transforming mma fragments after ldmatrix instead would repeat
// the work in every warp that reads the tile, 2 to 4 of them, and the fragment no longer knows
// which of its elements were padding.) The padding must stay 0, not act(shift), so fetch()
// remembers which vectors it zero-filled, a bit per vector and stage, and landed() skips them.
//
// The operand says which channels a vector holds: a thread's vectors share its lane (TileLanes),
// so along K they share their k (channel_of(k)), otherwise their rows (row_channel(row)); and it
// hands out the kVector channels' coefficients as vector_transform<kVector>(channel0).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/gemm_pipeline.cuh"

namespace engine::cuda {

// Operands with kTransformsInput take the rewriting loader below on the cp.async path.
template <typename Operand>
constexpr bool kTransformsInput = requires {
  requires Operand::kTransformsInput;
};

template <int kTileRows, int kTileK, int kThreads, typename Operand, int kVector, int kStages>
struct TransformingAsyncTileLoader
    : AsyncTileLoader<kTileRows, kTileK, kThreads, Operand, kVector> {
  using Base = AsyncTileLoader<kTileRows, kTileK, kThreads, Operand, kVector>;
  using Lanes = typename Base::Lanes;
  using Row = typename Operand::Row;
  static constexpr bool kRewritesLanded = true;
  static constexpr uint32_t kStageBits = (uint32_t{1} << Lanes::kPerThread) - 1;
  static_assert(kStages * Lanes::kPerThread <= 32, "one bit per vector and stage in a register");
  uint32_t zero_filled = 0;  // bit stage * kPerThread + i: this thread's vector i zero-filled

  template <typename Tile>
  __device__ __forceinline__ void fetch(const Operand& operand, const Row* rows, int32_t k0,
                                        int32_t k_end, Tile& tile, int stage) {
    uint32_t bits = 0;
    Base::fetch(operand, rows, k0, k_end, tile,
                [&bits](int i, bool zero) { bits |= static_cast<uint32_t>(zero) << i; });
    const int shift = stage * Lanes::kPerThread;
    zero_filled = (zero_filled & ~(kStageBits << shift)) | (bits << shift);
  }

  template <typename Tile>
  __device__ __forceinline__ void landed(const Operand& operand, const Row* rows, int32_t k0,
                                         Tile& tile, int stage) const {
    const uint32_t filled = zero_filled >> (stage * Lanes::kPerThread);
    if ((filled & kStageBits) == kStageBits) return;  // all padding or past the end
    int32_t channel0;
    if constexpr (Operand::kContiguousAlongK) {
      channel0 = operand.channel_of(k0 + this->lane * kVector);
    } else {
      channel0 = operand.row_channel(rows[this->lane * kVector]);
    }
    const auto transform = operand.template vector_transform<kVector>(channel0);
#pragma unroll
    for (int i = 0; i < Lanes::kPerThread; ++i) {
      if ((filled >> i) & 1u) continue;
      const int step = this->first + i * Lanes::kStep;
      if constexpr (Operand::kContiguousAlongK) {
        transform.apply(tile.at(step, this->lane * kVector));
      } else {
        transform.apply(tile.at(this->lane * kVector, step));
      }
    }
  }
};

// The cp.async loader of an operand: the rewriting one where it transforms its input.
template <int kTileRows, int kTileK, int kThreads, typename Operand, int kVector, int kStages>
using AsyncTileLoaderFor = std::conditional_t<
    kTransformsInput<Operand>,
    TransformingAsyncTileLoader<kTileRows, kTileK, kThreads, Operand, kVector, kStages>,
    AsyncTileLoader<kTileRows, kTileK, kThreads, Operand, kVector>>;

}  // namespace engine::cuda
