// BatchNorm's statistics of a GEMM's output columns, computed in the tensor-core engine's
// staged epilogue (gemm_tiles.cuh) while the block's fp32 results sit in shared memory, so that
// a convolution followed by a training BatchNorm need not read its output back
// (batchnorm_stats). The values are those the store writes (rounded to the output's dtype and
// read back), so the statistics are batchnorm_stats' of the output itself.
//
// Each block: per column of its tile, the mean over its valid rows, then m2 = sum of
// (value - mean)^2 by a second pass over shared memory (stable at any |mean| / std), both
// summed in a fixed order; written as the partial of row tile blockIdx.x. The last block of a
// column tile to finish (atomicInc ticket, as batchnorm_reduce.cuh) merges the tile's partials
// over the row tiles in row-tile order by Chan's formula into batchnorm.h's
// stats = f32[2C+1] (mean[C], m2[C], count). No float atomics: the bits never depend on which
// block finishes when.
#pragma once

#include <cstdint>

#include "kernels/cuda/batchnorm_reduce.cuh"
#include "kernels/cuda/gemm_epilogue.cuh"

namespace engine::cuda {

// Where a GEMM's column statistics go: the blocks' partials [row tiles, n] (mean and m2 of
// the tile's rows), one counter per column tile (zero before the first launch; every launch
// leaves them zero, as batchnorm's) and the merged stats, f32[2n+1]. As batchnorm_stats'
// merge, the merging block may also write the fp64 sums (batchnorm_stats_to_sums) and
// finalize them (batchnorm_finalize_sums; finalize.batch_stats null: not), through the same
// helpers: the same bits without their launches.
struct ColumnStatsTargets {
  float* part_mean = nullptr;
  float* part_m2 = nullptr;
  unsigned* counters = nullptr;
  float* stats = nullptr;
  double* sums = nullptr;                   // f64[2n+1] or null
  BatchNormFinalizeSumsArgs finalize = {};  // its sums and channels unread
};

// StoreToMatrix<TOut> that also asks the staged epilogue for the statistics of the columns it
// stores (kReadsStagedTile: gemm_mma_kernel then calls after_staged_tile). Only the staged
// epilogue of the tensor-core engine without split K computes them: the launcher
// (conv_forward_stats.cuh) runs this store only there.
template <typename TOut>
struct StoreWithColumnStats {
  static constexpr int kVectorWidth = StoreToMatrix<TOut>::kVectorWidth;
  static constexpr bool kReadsStagedTile = true;
  StoreToMatrix<TOut> matrix;  // not accumulating: the statistics are of what it writes
  ColumnStatsTargets targets;

  __device__ __forceinline__ void operator()(int split, int64_t m, int64_t n, float acc) const {
    matrix(split, m, n, acc);
  }
  bool vector_fits() const { return matrix.vector_fits(); }
  __device__ __forceinline__ void store_vector(int split, int64_t m, int64_t n,
                                               const float (&acc)[kVectorWidth]) const {
    matrix.store_vector(split, m, n, acc);
  }
  // The value the store writes for acc at column n, as a later read of it gives it back.
  __device__ __forceinline__ float stored(float acc, int64_t n) const {
    return to_f32(from_f32<TOut>(matrix.finish(acc, n, TOut{})));
  }

  // After the staged tile's stores: staged[row][col] holds the block's fp32 results; the
  // 8-float padding of its rows (BlockTile::kStagedLd) is the scratch of the lanes' sums, so
  // the epilogue needs no shared memory beyond the staged tile. Every thread of the block
  // calls it (it has barriers).
  template <typename Block>
  __device__ void after_staged_tile(float (*staged)[Block::kStagedLd], int32_t m0, int32_t m_size,
                                    int32_t n0, int32_t n_size) const {
    constexpr int kTileM = Block::kM, kTileN = Block::kN;
    // Each column is summed by kLanes threads over interleaved rows, their sums added in lane
    // order: 2 lanes for 128 x 128 (256 threads), 1 for 64 x 128, 4 for 128 x 64.
    constexpr int kLanes = Block::kThreads / kTileN;
    constexpr int kPad = Block::kStagedLd - kTileN;
    static_assert(Block::kThreads % kTileN == 0, "whole lanes of columns");
    static_assert(3 * kLanes * kTileN <= kTileM * kPad, "the lanes' scratch fits the padding");
    __shared__ unsigned ticket;
    const auto scratch = [&](int slot, int lane, int col) -> float& {
      const int i = (slot * kLanes + lane) * kTileN + col;
      return staged[i / kPad][kTileN + i % kPad];
    };
    const int col = static_cast<int>(threadIdx.x) % kTileN;
    const int lane = static_cast<int>(threadIdx.x) / kTileN;
    const int rows = m_size - m0 < kTileM ? m_size - m0 : kTileM;
    const int64_t n = static_cast<int64_t>(n0) + col;
    const bool active = n < n_size;

    float sum = 0.f;
    if (active) {
      for (int r = lane; r < rows; r += kLanes)
        sum += stored(staged[r][col], n);
    }
    scratch(0, lane, col) = sum;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int l = 0; l < kLanes; ++l)
      total += scratch(0, l, col);
    const float mean = total / static_cast<float>(rows);
    float m2 = 0.f;
    if (active) {
      for (int r = lane; r < rows; r += kLanes) {
        const float d = stored(staged[r][col], n) - mean;
        m2 += d * d;
      }
    }
    scratch(1, lane, col) = m2;
    __syncthreads();
    if (lane == 0 && active) {
      float tile_m2 = 0.f;
#pragma unroll
      for (int l = 0; l < kLanes; ++l)
        tile_m2 += scratch(1, l, col);
      targets.part_mean[blockIdx.x * static_cast<int64_t>(n_size) + n] = mean;
      targets.part_m2[blockIdx.x * static_cast<int64_t>(n_size) + n] = tile_m2;
    }

    // The last block of this column tile merges (batchnorm_reduce.cuh's last_block_of_tile,
    // with the tiles along y and the parts along x).
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) ticket = atomicInc(targets.counters + blockIdx.y, gridDim.x - 1);
    __syncthreads();
    if (ticket != gridDim.x - 1) return;
    __threadfence();
    merge_tile_partials<kTileM, kLanes>(scratch, col, lane, n, active, m_size, n_size);
  }

  // The column's partials over the row tiles, in row-tile order: lane l merges the contiguous
  // run l of kLanes, as offsets from row tile 0's mean (merge_in_order's reasoning), then lane
  // 0 merges the runs in lane order. The partials are other blocks' writes of this launch:
  // read volatile.
  template <int kTileM, int kLanes, typename Scratch>
  __device__ void merge_tile_partials(Scratch& scratch, int col, int lane, int64_t n, bool active,
                                      int32_t m_size, int32_t n_size) const {
    const int64_t parts = gridDim.x;
    const volatile float* part_mean = targets.part_mean;
    const volatile float* part_m2 = targets.part_m2;
    float count = 0.f, offset = 0.f, m2 = 0.f, reference = 0.f;
    if (active) {
      reference = part_mean[n];
      for (int64_t p = parts * lane / kLanes; p < parts * (lane + 1) / kLanes; ++p) {
        const int64_t first = p * kTileM;
        const float rows = static_cast<float>(m_size - first < kTileM ? m_size - first : kTileM);
        chan_merge(count, offset, m2, rows, part_mean[p * n_size + n] - reference,
                   part_m2[p * n_size + n]);
      }
    }
    scratch(0, lane, col) = count;
    scratch(1, lane, col) = offset;
    scratch(2, lane, col) = m2;
    __syncthreads();
    if (lane != 0 || !active) return;
    float total = 0.f, total_offset = 0.f, total_m2 = 0.f;
#pragma unroll
    for (int l = 0; l < kLanes; ++l)
      chan_merge(total, total_offset, total_m2, scratch(0, l, col), scratch(1, l, col),
                 scratch(2, l, col));
    const float mean = reference + total_offset;
    const int64_t channels = n_size;
    targets.stats[n] = mean;
    targets.stats[channels + n] = total_m2;
    if (n == 0) targets.stats[2 * channels] = total;
    if (targets.sums == nullptr) return;
    const ChannelSums sums = batchnorm_channel_sums(total, mean, total_m2);
    targets.sums[n] = sums.sum;
    targets.sums[channels + n] = sums.sumsq;
    if (n == 0) targets.sums[2 * channels] = static_cast<double>(total);
    if (targets.finalize.batch_stats != nullptr) {
      batchnorm_finalize_channel(targets.finalize, n, sums.sum, sums.sumsq,
                                 static_cast<double>(total));
    }
  }
};

}  // namespace engine::cuda
