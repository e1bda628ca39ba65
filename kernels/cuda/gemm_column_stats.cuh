// BatchNorm's statistics of a GEMM's output columns, computed in the tensor-core engine's
// staged epilogue (gemm_tiles.cuh) while the block's fp32 results sit in shared memory, so that
// a convolution followed by a training BatchNorm need not read its output back
// (batchnorm_stats). The values are those the store writes (rounded to the output's dtype and
// read back), so the statistics are batchnorm_stats' of the output itself: each store leaves
// the value it wrote in the staged tile (kRewritesStagedTile), so the two passes over it read
// that, without the bias and the rounding again.
//
// Each block: per column of its tile, the mean over its valid rows, then m2 = sum of
// (value - mean)^2 by a second pass over shared memory (stable at any |mean| / std), both
// summed in a fixed order; written as the partial of row tile blockIdx.x. The partials are
// merged by Chan's formula in two levels, each in a fixed order: the row tiles form groups of
// about sqrt(row tiles) (stats_group_tiles), the last block of a group to finish (atomicInc
// ticket, as batchnorm_reduce.cuh) merges the group's partials, and the last group of a column
// tile merges the groups' into batchnorm.h's stats = f32[2C+1] (mean[C], m2[C], count). One
// level over every row tile would leave one block walking thousands of partials per column
// (resnet50's layer1 at batch 256: 12,544 row tiles of 64) while the GPU waits; two levels walk
// about 2 sqrt of them. No float atomics: the bits never depend on which block finishes when.
#pragma once

#include <cstdint>

#include "kernels/cuda/batchnorm_reduce.cuh"
#include "kernels/cuda/gemm_epilogue.cuh"
#include "kernels/cuda/last_arrival.cuh"

namespace engine::cuda {

// Row tiles a group of the statistics' first merge level (last_arrival.cuh's choice: about
// sqrt(row tiles), at least kMinMergeGroup). `forced` (> 0) wins.
__host__ __device__ inline int64_t stats_group_tiles(int64_t row_tiles, int forced) {
  return merge_group_size(row_tiles, forced);
}

// The most groups `row_tiles` can form whatever the block tile (a workspace's bound).
inline int64_t stats_group_bound(int64_t row_tiles, int forced) {
  const int64_t smallest = forced > 0 ? forced : kMinMergeGroup;
  return (row_tiles + smallest - 1) / smallest;
}

// The merge's two levels over a launch's row tiles (gridDim.x), shared by every store that
// reduces its staged tile per column (this file's statistics; gemm_batchnorm_grad.cuh's
// backward sums). counters: per column tile (blockIdx.y), max_groups + 1 of them, one per
// group, then the column tile's (zero before the first launch; every launch leaves them zero).
struct RowTileMerge {
  unsigned* counters = nullptr;
  int64_t max_groups = 1;  // what the workspace holds (stats_group_bound)
  int group_tiles = 0;     // row tiles a group (0: stats_group_tiles' choice; tests force it)

  // After the block wrote its partial: the last block of its group to arrive merges the
  // group's partials, merge(false, first, last, rows_of) over row tiles [first, last); with
  // several groups it keeps that, keep_group(g, merged), and the last group of the column tile
  // merges the groups', merge(true, 0, groups, rows_of); finish(merged) then writes the
  // column tile's results. rows_of(i): the rows of row tile (or group) i. Every thread of the
  // block calls it (it has barriers); `ticket` is the kernel's __shared__ word.
  template <int kTileM, typename Merge, typename KeepGroup, typename Finish>
  __device__ void run(int32_t m_size, unsigned& ticket, Merge merge, KeepGroup keep_group,
                      Finish finish) const {
    const int64_t group = stats_group_tiles(gridDim.x, group_tiles);
    const auto tile_rows = [&](int64_t tile) {
      const int64_t begin = tile * kTileM;
      return static_cast<float>(m_size - begin < kTileM ? m_size - begin : kTileM);
    };
    const auto group_rows = [&](int64_t index) {
      const int64_t begin = index * group * kTileM, end = begin + group * kTileM;
      return static_cast<float>((end < m_size ? end : m_size) - begin);
    };
    merge_by_last_arrivals(
        counters + blockIdx.y * (max_groups + 1), static_cast<int>(blockIdx.x),
        static_cast<int>(gridDim.x), static_cast<int>(group), ticket,
        [&](int g, int first, int last, int groups) {
          const auto merged = merge(false, first, last, tile_rows);
          if (groups == 1) {
            finish(merged);
          } else {
            keep_group(g, merged);
          }
        },
        [&](int groups) { finish(merge(true, 0, groups, group_rows)); });
  }
};

// The threads of a staged epilogue that reduce the block's tile per column (this file's
// statistics, gemm_batchnorm_grad.cuh's backward sums): kLanes threads a column, each over
// the rows lane, lane + kLanes, ..., their values then added in lane order through kSlots
// slots of scratch in the staged rows' padding (BlockTile::kStagedLd's 8 floats a row, which
// the stores never read), so such an epilogue needs no shared memory beyond the staged tile.
// 2 lanes for 128 x 128 (256 threads), 1 for 64 x 128, 4 for 128 x 64.
template <typename Block, int kSlots>
struct StagedColumnLanes {
  static constexpr int kTileM = Block::kM, kTileN = Block::kN;
  static constexpr int kLanes = Block::kThreads / kTileN;
  static constexpr int kPad = Block::kStagedLd - kTileN;
  static_assert(Block::kThreads % kTileN == 0, "whole lanes of columns");
  static_assert(kSlots * kLanes * kTileN <= kTileM * kPad, "the lanes' scratch fits the padding");

  float (*staged)[Block::kStagedLd];
  int col;         // of the tile
  int lane;        // of the column's threads
  int rows;        // the tile's valid rows
  int64_t n;       // the column in the output
  int64_t n_size;  // the output's columns
  bool active;     // n < n_size

  __device__ StagedColumnLanes(float (*staged_tile)[Block::kStagedLd], int32_t m0, int32_t m_size,
                               int32_t n0, int32_t columns)
      : staged(staged_tile),
        col(static_cast<int>(threadIdx.x) % kTileN),
        lane(static_cast<int>(threadIdx.x) / kTileN),
        rows(m_size - m0 < kTileM ? m_size - m0 : kTileM),
        n(static_cast<int64_t>(n0) + col),
        n_size(columns),
        active(n < n_size) {}

  __device__ __forceinline__ float& scratch(int slot, int of_lane) const {
    const int i = (slot * kLanes + of_lane) * kTileN + col;
    return staged[i / kPad][kTileN + i % kPad];
  }
  // This column's slot summed over the lanes in lane order.
  __device__ __forceinline__ float lanes_sum(int slot) const {
    float total = 0.f;
#pragma unroll
    for (int l = 0; l < kLanes; ++l)
      total += scratch(slot, l);
    return total;
  }
  // This lane's contiguous run [begin, end) of the partials [first, last): lane l takes run l
  // of kLanes, so that adding the runs in lane order adds the partials in order.
  __device__ __forceinline__ void run(int64_t first, int64_t last, int64_t& begin,
                                      int64_t& end) const {
    const int64_t parts = last - first;
    begin = first + parts * lane / kLanes;
    end = first + parts * (lane + 1) / kLanes;
  }
};

// The workspace of a convolution whose staged epilogue reduces its output per column, with a
// fallback that runs the convolution plainly and then batchnorm's own reduction, in floats:
// the convolution's split-K partials and their counters (split_sum_counters), the reduction's
// workspace (the fallback), then the epilogue's counters (RowTileMerge), its two partial arrays
// [row tiles, n] and its groups' [groups, n]. Both paths' regions are always there, so that the
// counters of each stay zero whichever path a call takes (zero the workspace once). Sized for the
// smallest block tile (64 x 64): the most row tiles and column tiles any launch has.
struct EpilogueStatsWorkspace {
  int64_t split_floats = 0;
  int64_t split_counter_floats = 0;
  int64_t batchnorm_floats = 0;
  int64_t counter_floats = 0;
  int64_t row_tiles = 0;       // of the smallest block tile's rows
  int64_t partial_floats = 0;  // row tiles x n, each of the two arrays
  int64_t max_groups = 0;
  int64_t group_floats = 0;  // max_groups x n, each of the two arrays
  int64_t total() const {
    return split_floats + split_counter_floats + batchnorm_floats + counter_floats +
           2 * partial_floats + 2 * group_floats;
  }
};

// The regions of a workspace laid out as EpilogueStatsWorkspace says.
struct EpilogueStatsRegions {
  float* split_partials;
  unsigned* split_counters;
  float* batchnorm_scratch;
  unsigned* counters;
  float* part[2];    // [row tiles, n] each
  float* groups[2];  // [max_groups, n] each
};

inline EpilogueStatsWorkspace epilogue_stats_workspace(int64_t m, int64_t n, int splits,
                                                       int group_tiles) {
  const int64_t column_tiles = (n + kSmallestGemmTile - 1) / kSmallestGemmTile;
  EpilogueStatsWorkspace w;
  w.split_floats = splits > 1 ? splits * m * n : 0;
  w.split_counter_floats = (split_sum_counters(m, n, splits) + 3) / 4 * 4;
  w.batchnorm_floats = batchnorm_workspace_numel(m, n, ChannelReduceLaunch{});
  w.row_tiles = (m + kSmallestGemmTile - 1) / kSmallestGemmTile;
  w.max_groups = stats_group_bound(w.row_tiles, group_tiles);
  w.counter_floats = (column_tiles * (w.max_groups + 1) + 3) / 4 * 4;
  w.partial_floats = w.row_tiles * n;
  w.group_floats = w.max_groups * n;
  return w;
}

inline EpilogueStatsRegions epilogue_stats_regions(const EpilogueStatsWorkspace& sizes,
                                                   void* workspace) {
  static_assert(sizeof(unsigned) == sizeof(float));
  float* const split = static_cast<float*>(workspace);
  float* const split_counters = split + sizes.split_floats;
  float* const batchnorm = split_counters + sizes.split_counter_floats;
  float* const counters = batchnorm + sizes.batchnorm_floats;
  float* const part = counters + sizes.counter_floats;
  float* const groups = part + 2 * sizes.partial_floats;
  return {split,
          reinterpret_cast<unsigned*>(split_counters),
          batchnorm,
          reinterpret_cast<unsigned*>(counters),
          {part, part + sizes.partial_floats},
          {groups, groups + sizes.group_floats}};
}

// Where a GEMM's column statistics go: the blocks' partials [row tiles, n] (mean and m2 of
// the tile's rows), one counter per column tile (zero before the first launch; every launch
// leaves them zero, as batchnorm's) and the merged stats, f32[2n+1]. As batchnorm_stats'
// merge, the merging block may also write the fp64 sums (batchnorm_stats_to_sums) and
// finalize them (batchnorm_finalize_sums; finalize.batch_stats null: not), through the same
// helpers: the same bits without their launches.
struct ColumnStatsTargets {
  float* part_mean = nullptr;  // [row tiles, n]
  float* part_m2 = nullptr;
  float* group_mean = nullptr;  // [groups, n]: the first level's merges
  float* group_m2 = nullptr;
  RowTileMerge merge;
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
  static constexpr bool kRewritesStagedTile = true;
  StoreToMatrix<TOut> matrix;  // not accumulating: the statistics are of what it writes
  ColumnStatsTargets targets;

  // The value the store writes for acc at column n (with the bias, rounded to TOut).
  __device__ __forceinline__ TOut stored(float acc, int64_t n) const {
    return from_f32<TOut>(matrix.finish(acc, n, TOut{}));
  }
  // acc by reference: left holding the value written, as a later read of it gives it back,
  // which the staged epilogue writes back over the staged tile for after_staged_tile.
  __device__ __forceinline__ void operator()(int /*split*/, int64_t m, int64_t n,
                                             float& acc) const {
    const TOut value = stored(acc, n);
    matrix.out[m * matrix.ld + n] = value;
    acc = to_f32(value);
  }
  bool vector_fits() const { return matrix.vector_fits(); }
  __device__ __forceinline__ void store_vector(int /*split*/, int64_t m, int64_t n,
                                               float (&acc)[kVectorWidth]) const {
    Vector16<TOut> result;
#pragma unroll
    for (int i = 0; i < kVectorWidth; ++i) {
      result.v[i] = stored(acc[i], n + i);
      acc[i] = to_f32(result.v[i]);
    }
    *reinterpret_cast<Vector16<TOut>*>(matrix.out + m * matrix.ld + n) = result;
  }

  // After the staged tile's stores: staged[row][col] holds the values they wrote, as fp32; the
  // 8-float padding of its rows (BlockTile::kStagedLd) is the scratch of the lanes' sums, so
  // the epilogue needs no shared memory beyond the staged tile. Every thread of the block
  // calls it (it has barriers).
  template <typename Block>
  __device__ void after_staged_tile(float (*staged)[Block::kStagedLd], int32_t m0, int32_t m_size,
                                    int32_t n0, int32_t n_size) const {
    const StagedColumnLanes<Block, 3> lanes(staged, m0, m_size, n0, n_size);
    constexpr int kLanes = StagedColumnLanes<Block, 3>::kLanes;
    __shared__ unsigned ticket;
    const int col = lanes.col;

    float sum = 0.f;
    if (lanes.active) {
      for (int r = lanes.lane; r < lanes.rows; r += kLanes)
        sum += staged[r][col];
    }
    lanes.scratch(0, lanes.lane) = sum;
    __syncthreads();
    const float mean = lanes.lanes_sum(0) / static_cast<float>(lanes.rows);
    float m2 = 0.f;
    if (lanes.active) {
      for (int r = lanes.lane; r < lanes.rows; r += kLanes) {
        const float d = staged[r][col] - mean;
        m2 += d * d;
      }
    }
    lanes.scratch(1, lanes.lane) = m2;
    __syncthreads();
    const bool writer = lanes.lane == 0 && lanes.active;
    if (writer) {
      const float tile_m2 = lanes.lanes_sum(1);
      targets.part_mean[blockIdx.x * static_cast<int64_t>(n_size) + lanes.n] = mean;
      targets.part_m2[blockIdx.x * static_cast<int64_t>(n_size) + lanes.n] = tile_m2;
    }

    // The two levels: the last block of a group merges the group's partials, the last group
    // of the column tile the groups'.
    targets.merge.template run<Block::kM>(
        m_size, ticket,
        [&](bool of_groups, int64_t first, int64_t last, auto rows_of) {
          return merge_partials(lanes, first, last,
                                of_groups ? targets.group_mean : targets.part_mean,
                                of_groups ? targets.group_m2 : targets.part_m2, rows_of);
        },
        [&](int64_t g, const ChannelStats& merged) {
          if (writer) {
            targets.group_mean[g * n_size + lanes.n] = merged.mean;
            targets.group_m2[g * n_size + lanes.n] = merged.m2;
          }
        },
        [&](const ChannelStats& merged) {
          if (writer) finish(lanes.n, n_size, merged);
        });
  }

  // The column's partials [first, last) (rows_of(p) rows each), in order: lane l merges the
  // contiguous run l of kLanes, as offsets from partial `first`'s mean (merge_in_order's
  // reasoning), then lane 0 merges the runs in lane order; the result is lane 0's. The
  // partials are other blocks' writes of this launch: read volatile, the next one loaded
  // before the current one is merged. Every thread of the block calls it (it has a barrier).
  template <typename Lanes, typename RowsOf>
  __device__ static ChannelStats merge_partials(const Lanes& lanes, int64_t first, int64_t last,
                                                const float* means, const float* m2s,
                                                RowsOf rows_of) {
    const volatile float* part_mean = means;
    const volatile float* part_m2 = m2s;
    const int64_t n = lanes.n, n_size = lanes.n_size;
    float count = 0.f, offset = 0.f, m2 = 0.f, reference = 0.f;
    if (lanes.active) {
      reference = part_mean[first * n_size + n];
      int64_t begin, end;
      lanes.run(first, last, begin, end);
      float next_mean = 0.f, next_m2 = 0.f;
      if (begin < end) {
        next_mean = part_mean[begin * n_size + n];
        next_m2 = part_m2[begin * n_size + n];
      }
      for (int64_t p = begin; p < end; ++p) {
        const float mean_p = next_mean, m2_p = next_m2;
        if (p + 1 < end) {
          next_mean = part_mean[(p + 1) * n_size + n];
          next_m2 = part_m2[(p + 1) * n_size + n];
        }
        chan_merge(count, offset, m2, rows_of(p), mean_p - reference, m2_p);
      }
    }
    lanes.scratch(0, lanes.lane) = count;
    lanes.scratch(1, lanes.lane) = offset;
    lanes.scratch(2, lanes.lane) = m2;
    __syncthreads();
    float total = 0.f, total_offset = 0.f, total_m2 = 0.f;
    if (lanes.lane == 0 && lanes.active) {
#pragma unroll
      for (int l = 0; l < Lanes::kLanes; ++l)
        chan_merge(total, total_offset, total_m2, lanes.scratch(0, l), lanes.scratch(1, l),
                   lanes.scratch(2, l));
    }
    return {total, reference + total_offset, total_m2};
  }

  // The column's statistics, and what the merge finishes of the phases after them.
  __device__ void finish(int64_t n, int64_t channels, const ChannelStats& merged) const {
    targets.stats[n] = merged.mean;
    targets.stats[channels + n] = merged.m2;
    if (n == 0) targets.stats[2 * channels] = merged.count;
    if (targets.sums == nullptr) return;
    const ChannelSums sums = batchnorm_channel_sums(merged.count, merged.mean, merged.m2);
    targets.sums[n] = sums.sum;
    targets.sums[channels + n] = sums.sumsq;
    if (n == 0) targets.sums[2 * channels] = static_cast<double>(merged.count);
    if (targets.finalize.batch_stats != nullptr) {
      batchnorm_finalize_channel(targets.finalize, n, sums.sum, sums.sumsq,
                                 static_cast<double>(merged.count));
    }
  }
};

}  // namespace engine::cuda
