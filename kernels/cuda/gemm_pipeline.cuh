// How the GEMM engines of gemm_tiles.cuh feed their shared tiles, with one barrier per K tile:
//   through registers (TileLoader, double_buffered_k_loop): the next K tile is loaded element
//     by element while the FMA or tensor units work on the current one from the other of two
//     stages;
//   by cp.async (AsyncTileLoader, multistage_k_loop): 16-byte vectors go straight to shared
//     memory, kStages - 1 K tiles in flight while the tensor cores work on another, no
//     registers held for them.
// Operands are read through the Row/K cursors of gemm_operands.cuh and conv_operands.cuh,
// worked out once per block into shared memory (prepare_rows).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/async_copy.cuh"
#include "kernels/cuda/device_types.cuh"

namespace engine::cuda {

template <typename To, typename From>
__device__ __forceinline__ To convert_element(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else {
    return from_f32<To>(to_f32(value));
  }
}

// Which vectors of kVector elements of one operand's kTileRows x kTileK tile a thread loads
// (kVector 8: 16 bytes of bf16, where the operand's vectorizable() holds), along the operand's
// contiguous index. Consecutive threads take consecutive k when the operand is contiguous
// along k, else consecutive rows, so global loads coalesce; each thread keeps that index (its
// lane) for the whole kernel and steps the other by kStep over kPerThread vectors.
template <int kTileRows, int kTileK, int kThreads, bool kAlongK, int kVector>
struct TileLanes {
  static constexpr int kLanes = (kAlongK ? kTileK : kTileRows) / kVector;
  static constexpr int kStep = kThreads / kLanes;
  static constexpr int kPerThread = kTileRows * kTileK / (kThreads * kVector);
  static_assert(kThreads % kLanes == 0 && (kAlongK ? kTileRows : kTileK) == kStep * kPerThread,
                "the threads must cover the tile evenly");
  int lane, first;
  __device__ __forceinline__ TileLanes()
      : lane(threadIdx.x % kLanes), first(threadIdx.x / kLanes) {}
};

// The cursors of rows [row0, row0 + kTileRows) into shared memory; rows at or beyond
// row_limit read row 0 instead, which only feeds outputs that are never stored. The caller
// synchronizes before the first fetch.
template <int kTileRows, int kThreads, typename Operand>
__device__ __forceinline__ void prepare_rows(const Operand& operand, int32_t row0,
                                             int32_t row_limit, typename Operand::Row* rows) {
  for (int r = threadIdx.x; r < kTileRows; r += kThreads)
    rows[r] = operand.row(row0 + r < row_limit ? row0 + r : 0);
}

// Element by element through registers: fetch() loads the tile at K offset k0 (0 at
// k >= k_end), store() puts it into a shared tile. Every operand can be read so.
template <int kTileRows, int kTileK, int kThreads, typename Operand, typename Element>
struct TileLoader : TileLanes<kTileRows, kTileK, kThreads, Operand::kContiguousAlongK, 1> {
  using Lanes = TileLanes<kTileRows, kTileK, kThreads, Operand::kContiguousAlongK, 1>;
  using Row = typename Operand::Row;
  Element values[Lanes::kPerThread];

  __device__ __forceinline__ void fetch(const Operand& operand, const Row* rows, int32_t k0,
                                        int32_t k_end) {
    if constexpr (Operand::kContiguousAlongK) {
      const int32_t k = k0 + this->lane;
      const bool inside = k < k_end;
      const auto k_cursor = operand.k(inside ? k : 0);
#pragma unroll
      for (int i = 0; i < Lanes::kPerThread; ++i) {
        values[i] = inside ? convert_element<Element>(
                                 operand.load(rows[this->first + i * Lanes::kStep], k_cursor))
                           : convert_element<Element>(0.f);
      }
    } else {
      const Row row_cursor = rows[this->lane];
#pragma unroll
      for (int i = 0; i < Lanes::kPerThread; ++i) {
        const int32_t k = k0 + this->first + i * Lanes::kStep;
        values[i] = k < k_end ? convert_element<Element>(operand.load(row_cursor, operand.k(k)))
                              : convert_element<Element>(0.f);
      }
    }
  }

  // Registers -> a shared tile: put(row, k, value).
  template <typename Put>
  __device__ __forceinline__ void store(Put put) const {
#pragma unroll
    for (int i = 0; i < Lanes::kPerThread; ++i) {
      if constexpr (Operand::kContiguousAlongK) {
        put(this->first + i * Lanes::kStep, this->lane, values[i]);
      } else {
        put(this->lane, this->first + i * Lanes::kStep, values[i]);
      }
    }
  }
};

// 16-byte vectors straight from global into a shared tile with cp.async (async_copy.cuh), no
// registers held: fetch(k0, tile) issues the tile at K offset k0 into the caller's open group,
// zero-filled at k >= k_end and where the operand has no source (padding); noted(i, zero)
// hears whether vector i of this thread's was zero-filled. Needs the operand's
// vectorizable(kVector) and tile.at(row, k) 16-byte aligned at every vector. It leaves the
// landed vectors as they are (kRewritesLanded: see gemm_operand_transform.cuh for one that
// does not).
template <int kTileRows, int kTileK, int kThreads, typename Operand, int kVector>
struct AsyncTileLoader
    : TileLanes<kTileRows, kTileK, kThreads, Operand::kContiguousAlongK, kVector> {
  using Lanes = TileLanes<kTileRows, kTileK, kThreads, Operand::kContiguousAlongK, kVector>;
  using Row = typename Operand::Row;
  static constexpr bool kRewritesLanded = false;
  struct Unnoted {
    __device__ __forceinline__ void operator()(int, bool) const {}
  };

  template <typename Tile>
  __device__ __forceinline__ static void copy(const Operand& operand, Tile& tile, int row, int k,
                                              const void* source) {
    cp_async_16(shared_address(tile.at(row, k)), source != nullptr ? source : operand.origin(),
                source != nullptr);
  }

  template <typename Tile, typename Noted = Unnoted>
  __device__ __forceinline__ void fetch(const Operand& operand, const Row* rows, int32_t k0,
                                        int32_t k_end, Tile& tile, Noted noted = {}) const {
    if constexpr (Operand::kContiguousAlongK) {
      const int k_in_tile = this->lane * kVector;
      const bool inside = k0 + k_in_tile < k_end;
      const auto k_cursor = operand.k(inside ? k0 + k_in_tile : 0);
#pragma unroll
      for (int i = 0; i < Lanes::kPerThread; ++i) {
        const int row = this->first + i * Lanes::kStep;
        const auto* source = inside ? operand.vector_source(rows[row], k_cursor) : nullptr;
        noted(i, source == nullptr);
        copy(operand, tile, row, k_in_tile, source);
      }
    } else {
      const Row row_cursor = rows[this->lane * kVector];
#pragma unroll
      for (int i = 0; i < Lanes::kPerThread; ++i) {
        const int k_in_tile = this->first + i * Lanes::kStep;
        const int32_t k = k0 + k_in_tile;
        const auto* source = k < k_end ? operand.vector_source(row_cursor, operand.k(k)) : nullptr;
        noted(i, source == nullptr);
        copy(operand, tile, this->lane * kVector, k_in_tile, source);
      }
    }
  }
};

// The K range of split blockIdx.z.
__device__ __forceinline__ void split_range(int32_t k_size, int32_t k_per_split, int32_t& k_begin,
                                            int32_t& k_end) {
  k_begin = static_cast<int32_t>(blockIdx.z) * k_per_split;
  k_end = k_begin + k_per_split < k_size ? k_begin + k_per_split : k_size;
}

// One operand's path into shared memory through registers: its loader, the operand, its rows'
// cursors and the two stages of its shared tile, which put(tile) returns the store functor of.
template <typename Loader, typename Operand, typename Tile, typename Put>
struct TileFeed {
  Loader& loader;
  const Operand& operand;
  const typename Operand::Row* rows;
  Tile* stages;
  Put put;
  __device__ __forceinline__ void fetch(int32_t k0, int32_t k_end) {
    loader.fetch(operand, rows, k0, k_end);
  }
  __device__ __forceinline__ void store(int stage) { loader.store(put(stages[stage])); }
};

// The K loop through registers: K tile 0 fetched and stored into stage 0; then per tile, the
// next one fetched into registers, compute(stage) on the current one, the next stored into
// the other stage, and one barrier (the stage just stored is read only after it, the one just
// computed is written only after the next).
template <int kTileK, typename AFeed, typename BFeed, typename Compute>
__device__ __forceinline__ void double_buffered_k_loop(int32_t k_begin, int32_t k_end, AFeed a,
                                                       BFeed b, Compute compute) {
  if (k_begin < k_end) {
    a.fetch(k_begin, k_end);
    b.fetch(k_begin, k_end);
    a.store(0);
    b.store(0);
    __syncthreads();
  }
  int stage = 0;
  for (int32_t k0 = k_begin; k0 < k_end; k0 += kTileK) {
    const bool more = k0 + kTileK < k_end;
    if (more) {
      a.fetch(k0 + kTileK, k_end);
      b.fetch(k0 + kTileK, k_end);
    }
    compute(stage);
    if (more) {
      a.store(stage ^ 1);
      b.store(stage ^ 1);
    }
    __syncthreads();
    stage ^= 1;
  }
}

// One operand's path into shared memory by cp.async: its loader, the operand, its rows'
// cursors and the stages of its shared tile. A loader that rewrites what landed (an input
// transform) hears the stage of each fetch, and landed(k0, stage) once this thread's copies of
// that tile are in and before the barrier that publishes them; for the others it is nothing.
template <typename Loader, typename Operand, typename Tile>
struct AsyncTileFeed {
  Loader& loader;
  const Operand& operand;
  const typename Operand::Row* rows;
  Tile* stages;
  static constexpr bool kRewrites = std::remove_cvref_t<Loader>::kRewritesLanded;
  __device__ __forceinline__ void fetch(int32_t k0, int32_t k_end, int stage) {
    if constexpr (kRewrites) {
      loader.fetch(operand, rows, k0, k_end, stages[stage], stage);
    } else {
      loader.fetch(operand, rows, k0, k_end, stages[stage]);
    }
  }
  __device__ __forceinline__ void landed(int32_t k0, int stage) {
    if constexpr (kRewrites) loader.landed(operand, rows, k0, stages[stage], stage);
  }
};

// The K loop by cp.async with kStages stages: kStages - 1 tiles in flight ahead of the one
// computed. Per tile: wait for its copies (this thread's), let the loaders rewrite them (an
// input transform; nothing otherwise), one barrier (everyone's have landed, and everyone is
// done with the stage computed last, which the next copies refill),
// issue the tile kStages - 1 ahead into that stage, compute. Every step commits one group,
// empty past the end, so "all but the newest kStages - 2 groups" is always the tile about to
// be computed; the groups left at the end are empty.
template <int kStages, int kTileK, typename AFeed, typename BFeed, typename Compute>
__device__ __forceinline__ void multistage_k_loop(int32_t k_begin, int32_t k_end, AFeed a, BFeed b,
                                                  Compute compute) {
  static_assert(kStages >= 2, "a pipeline needs two stages or more");
  const int32_t tiles = k_begin < k_end ? (k_end - k_begin + kTileK - 1) / kTileK : 0;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles) {
      a.fetch(k_begin + s * kTileK, k_end, s);
      b.fetch(k_begin + s * kTileK, k_end, s);
    }
    cp_async_commit();
  }
  int stage = 0, refill = kStages - 1;
  for (int32_t t = 0; t < tiles; ++t) {
    cp_async_wait<kStages - 2>();
    a.landed(k_begin + t * kTileK, stage);
    b.landed(k_begin + t * kTileK, stage);
    __syncthreads();
    if (t + kStages - 1 < tiles) {
      const int32_t k0 = k_begin + (t + kStages - 1) * kTileK;
      a.fetch(k0, k_end, refill);
      b.fetch(k0, k_end, refill);
    }
    cp_async_commit();
    compute(stage);
    stage = stage + 1 == kStages ? 0 : stage + 1;
    refill = refill + 1 == kStages ? 0 : refill + 1;
  }
}

}  // namespace engine::cuda
