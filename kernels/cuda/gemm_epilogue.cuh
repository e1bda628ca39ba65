// Where GEMM results go: straight into the output (with bias and accumulation), or, for
// split-K, into per-split fp32 partials summed in a fixed order, so that results are
// deterministic: by the last of a tile's splits to finish (SplitSum's counters given) or by
// splitk_reduce_kernel's launch after the GEMM. Also the column sums used for bias gradients.
//
// A store takes one result, operator()(split, m, n, acc), and for the tensor-core engine's
// staged epilogue (gemm_tiles.cuh) also a 16-byte run: store_vector(split, m, n, acc[]) puts
// kVectorWidth consecutive columns n.. of row m with one 16-byte access (and the same
// arithmetic per element), used only where vector_fits() held on the host.
#pragma once

#include <cstdint>

#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/last_arrival.cuh"
#include "kernels/cuda/launch.h"

namespace engine::cuda {

// 16 bytes of T (elementwise.cuh's pack and width): what one vector access of a staged store
// moves.
template <typename T>
using Vector16 = Pack<T, vector_width<T>()>;

// A store's traits, each a static constexpr bool member, false where it has none.
//
// Whether a store also asks the staged epilogue for the block's whole tile: gemm_mma_kernel
// then calls store.after_staged_tile<Block>(staged, m0, m_size, n0, n_size) once its stores
// are done, every thread of the block (gemm_column_stats.cuh: BatchNorm's statistics).
template <typename Store>
constexpr bool store_reads_staged_tile() {
  return requires {
    requires Store::kReadsStagedTile;
  };
}

// Whether a store that reads the staged tile also rewrites it first: gemm_mma_kernel then
// hands store_vector and operator() its values by reference, writes what the store left in
// them back over the staged tile (each at its own place), and waits for the whole block before
// after_staged_tile, which so reads what the stores worked out instead of loading it again
// (gemm_batchnorm_grad.cuh: the gated gradient and the BatchNorm input it is summed against).
template <typename Store>
constexpr bool store_rewrites_staged_tile() {
  return requires {
    requires Store::kRewritesStagedTile;
  };
}

// Whether a store finishes its tile once every split has stored: the GEMM kernels (each
// engine, each epilogue) then call store.finish_tile<kTileM, kTileN>(m0, m_size, n0, n_size)
// after a block's stores, every thread of the block (StoreSplitPartial: the split-K sum).
template <typename Store>
constexpr bool store_finishes_tile() {
  return requires {
    requires Store::kFinishesTile;
  };
}

// out[m * ld + n] = acc (+ bias[n]) (+ out[m * ld + n] when accumulating).
template <typename TOut>
struct StoreToMatrix {
  static constexpr int kVectorWidth = vector_width<TOut>();
  TOut* out;
  int64_t ld;
  const float* bias;  // may be null
  bool accumulate;
  __device__ __forceinline__ float finish(float acc, int64_t n, TOut old) const {
    if (bias != nullptr) acc += bias[n];
    if (accumulate) acc += to_f32(old);
    return acc;
  }
  __device__ __forceinline__ void operator()(int /*split*/, int64_t m, int64_t n, float acc) const {
    TOut* target = out + m * ld + n;
    *target = from_f32<TOut>(finish(acc, n, accumulate ? *target : TOut{}));
  }
  bool vector_fits() const { return all_aligned<kVectorWidth>(out) && ld % kVectorWidth == 0; }
  __device__ __forceinline__ void store_vector(int /*split*/, int64_t m, int64_t n,
                                               const float (&acc)[kVectorWidth]) const {
    auto* target = reinterpret_cast<Vector16<TOut>*>(out + m * ld + n);
    Vector16<TOut> old{}, result;
    if (accumulate) old = *target;
#pragma unroll
    for (int i = 0; i < kVectorWidth; ++i)
      result.v[i] = from_f32<TOut>(finish(acc[i], n + i, old.v[i]));
    *target = result;
  }
};

// StoreToMatrix<TOut> (no bias, not accumulating) that adds addend (m x n like out) to what it
// would store, as a separate add after it would: out = round(round(acc) + addend), so a
// residual block's input gradient takes its identity branch's in the convolution's epilogue
// with the same bits as the add's launch it saves.
template <typename TOut>
struct StoreToMatrixAdding {
  static constexpr int kVectorWidth = StoreToMatrix<TOut>::kVectorWidth;
  StoreToMatrix<TOut> matrix;
  const TOut* addend;
  __device__ __forceinline__ static TOut add(float acc, TOut addend_value) {
    return from_f32<TOut>(to_f32(from_f32<TOut>(acc)) + to_f32(addend_value));
  }
  __device__ __forceinline__ void operator()(int /*split*/, int64_t m, int64_t n, float acc) const {
    const int64_t at = m * matrix.ld + n;
    matrix.out[at] = add(acc, addend[at]);
  }
  bool vector_fits() const { return matrix.vector_fits() && all_aligned<kVectorWidth>(addend); }
  __device__ __forceinline__ void store_vector(int /*split*/, int64_t m, int64_t n,
                                               const float (&acc)[kVectorWidth]) const {
    const int64_t at = m * matrix.ld + n;
    const Vector16<TOut> other = *reinterpret_cast<const Vector16<TOut>*>(addend + at);
    Vector16<TOut> result;
#pragma unroll
    for (int i = 0; i < kVectorWidth; ++i)
      result.v[i] = add(acc[i], other.v[i]);
    *reinterpret_cast<Vector16<TOut>*>(matrix.out + at) = result;
  }
};

// The order in which split-K partials are summed, whoever sums them: with `splits` at most
// kMinMergeGroup in one level, start + p[0] + p[1] + ..., else in groups of
// merge_group_size(splits) (about sqrt: no block walks hundreds of partials alone,
// last_arrival.cuh), start + (0 + p[0] + ... + p[g - 1]) + (0 + p[g] + ...) + ... Both summers
// follow it, so the bits do not depend on which one ran. start: the output's old value when
// accumulating, else 0.
inline __host__ __device__ int64_t split_sum_group(int64_t splits) {
  return merge_group_size(splits);
}

// The output that split-K partials are summed into (m x n, row-major), and how: out f32 or
// bf16, accumulating or not; counters: the last split of each output tile to finish sums them
// (split_sum_counters of them, zeroed once, left zero), null: splitk_reduce_launch after the
// GEMM does.
struct SplitSum {
  void* out = nullptr;
  bool out_bf16 = false;
  bool accumulate = false;
  unsigned* counters = nullptr;
  int group = 1;  // split_sum_group(splits), worked out on the host
};

// The smallest block tile's side (64 x 64): what per-tile workspaces are sized by, whichever
// tile a launch takes (these split counters, the epilogue statistics' partials and counters).
constexpr int64_t kSmallestGemmTile = 64;

// Counters a split-K GEMM of m x n with `splits` needs for its tiles to sum their own
// partials: tile_index's (x, y) over the smallest block tile, each its groups' and one more
// (merge_by_last_arrivals); none without a split.
inline int64_t split_sum_counters(int64_t m, int64_t n, int splits) {
  if (splits <= 1) return 0;
  const int64_t tiles = ((m + kSmallestGemmTile - 1) / kSmallestGemmTile) *
                        ((n + kSmallestGemmTile - 1) / kSmallestGemmTile);
  return tiles * (merge_groups(splits, split_sum_group(splits)) + 1);
}

// partials[(split * rows + m) * cols + n] = acc; with sum.counters, the last split of each
// output tile to finish then sums the tile's partials into sum.out (finish_tile).
struct StoreSplitPartial {
  static constexpr int kVectorWidth = vector_width<float>();
  static constexpr bool kFinishesTile = true;
  float* partials;
  int64_t rows;
  int64_t cols;
  SplitSum sum = {};
  __device__ __forceinline__ void operator()(int split, int64_t m, int64_t n, float acc) const {
    partials[(split * rows + m) * cols + n] = acc;
  }
  bool vector_fits() const {
    return all_aligned<kVectorWidth>(partials) && cols % kVectorWidth == 0;
  }
  __device__ __forceinline__ void store_vector(int split, int64_t m, int64_t n,
                                               const float (&acc)[kVectorWidth]) const {
    Vector16<float> result;
#pragma unroll
    for (int i = 0; i < kVectorWidth; ++i)
      result.v[i] = acc[i];
    *reinterpret_cast<Vector16<float>*>(partials + (split * rows + m) * cols + n) = result;
  }

  // After this block's stores (split blockIdx.z of the tile at m0, n0): the last split of a
  // group to finish sums the group's partials (into the group's first slot, or with one group
  // into out), the last group the groups' (split_sum_group's order). The partials are other
  // blocks' writes of this launch: read through L2 (__ldcg), never a stale L1 line. Its
  // figures are 32-bit and the group comes from the host: anything more held across the main
  // loop costs that loop instructions (tests/cuda_budget).
  template <int kTileM, int kTileN>
  __device__ void finish_tile(int32_t m0, int32_t m_size, int32_t n0, int32_t n_size) const {
    if (sum.counters == nullptr) return;  // splitk_reduce_launch sums them
    __shared__ unsigned ticket;
    const int splits = static_cast<int>(gridDim.z), group = sum.group;
    const int groups = (splits + group - 1) / group;
    const unsigned tile = blockIdx.x + gridDim.x * blockIdx.y;
    merge_by_last_arrivals(
        sum.counters + tile * (groups + 1), static_cast<int>(blockIdx.z), splits, group, ticket,
        [&](int, int first, int last, int) {
          sum_tile<kTileM, kTileN>(m0, m_size, n0, n_size, first, last, 1, groups == 1);
        },
        [&](int) {
          sum_tile<kTileM, kTileN>(m0, m_size, n0, n_size, 0, groups * group, group, true);
        });
  }

  // Sums slots first, first + step, ... (< end) of the tile's partials, in that order, into
  // out (start: out's value when accumulating) or, not to_out, from 0 into slot `first`.
  template <int kTileM, int kTileN>
  __device__ void sum_tile(int32_t m0, int32_t m_size, int32_t n0, int32_t n_size, int first,
                           int end, int step, bool to_out) const {
    if (cols % 4 == 0) {
      sum_runs<kTileM, kTileN, 4>(m0, m_size, n0, n_size, first, end, step, to_out);
    } else {
      sum_runs<kTileM, kTileN, 1>(m0, m_size, n0, n_size, first, end, step, to_out);
    }
  }

  // sum_tile over runs of kWidth columns a thread (kWidth 4: cols % 4 == 0, so a run never
  // crosses the output's last column and its partials are 16-byte aligned).
  template <int kTileM, int kTileN, int kWidth>
  __device__ void sum_runs(int32_t m0, int32_t m_size, int32_t n0, int32_t n_size, int first,
                           int end, int step, bool to_out) const {
    constexpr int kRuns = kTileN / kWidth;
    const int64_t slot_stride = rows * cols;
    for (int run = threadIdx.x; run < kTileM * kRuns; run += blockDim.x) {
      const int32_t m = m0 + run / kRuns, n = n0 + run % kRuns * kWidth;
      if (m >= m_size || n >= n_size) continue;
      const int64_t at = static_cast<int64_t>(m) * cols + n;
      float total[kWidth];
#pragma unroll
      for (int i = 0; i < kWidth; ++i)
        total[i] = to_out && sum.accumulate ? out_value(at + i) : 0.f;
      const float* part = partials + first * slot_stride + at;
      for (int slot = first; slot < end; slot += step, part += step * slot_stride) {
        if constexpr (kWidth == 4) {
          const float4 v = __ldcg(reinterpret_cast<const float4*>(part));
          total[0] += v.x;
          total[1] += v.y;
          total[2] += v.z;
          total[3] += v.w;
        } else {
          total[0] += __ldcg(part);
        }
      }
#pragma unroll
      for (int i = 0; i < kWidth; ++i) {
        if (to_out) {
          write_out(at + i, total[i]);
        } else {
          partials[first * slot_stride + at + i] = total[i];
        }
      }
    }
  }

  __device__ __forceinline__ float out_value(int64_t at) const {
    return sum.out_bf16 ? to_f32(static_cast<const __nv_bfloat16*>(sum.out)[at])
                        : static_cast<const float*>(sum.out)[at];
  }
  __device__ __forceinline__ void write_out(int64_t at, float value) const {
    if (sum.out_bf16) {
      static_cast<__nv_bfloat16*>(sum.out)[at] = from_f32<__nv_bfloat16>(value);
    } else {
      static_cast<float*>(sum.out)[at] = value;
    }
  }
};
static_assert(store_finishes_tile<StoreSplitPartial>() &&
              !store_finishes_tile<StoreToMatrix<float>>() &&
              !store_reads_staged_tile<StoreSplitPartial>());

// The split-K sum of the partials at index i (split_sum_group's order).
__device__ __forceinline__ float split_sum_at(int splits, int64_t count, const float* partials,
                                              int64_t i, float start) {
  if (splits <= kMinMergeGroup) {
    for (int split = 0; split < splits; ++split)
      start += partials[split * count + i];
    return start;
  }
  const int64_t group = split_sum_group(splits);
  for (int64_t first = 0; first < splits; first += group) {
    const int64_t last = first + group < splits ? first + group : splits;
    float group_sum = 0.f;
    for (int64_t split = first; split < last; ++split)
      group_sum += partials[split * count + i];
    start += group_sum;
  }
  return start;
}

// out[i] = the sum over splits of partials[split * count + i] (+ out[i] when accumulating).
template <typename TOut>
__global__ void splitk_reduce_kernel(int splits, int64_t count, const float* partials, TOut* out,
                                     bool accumulate) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] =
        from_f32<TOut>(split_sum_at(splits, count, partials, i, accumulate ? to_f32(out[i]) : 0.f));
  }
}

// Column sums of a rows x cols matrix, in two deterministic steps: blocks of 32 columns x
// 8 row-lanes sum a slice of rows each into partials[slice * cols + col], then
// column_sum_finalize_kernel adds the slices in order.
constexpr int kColumnSumWidth = 32;
constexpr int kColumnSumLanes = 8;

template <typename T>
__global__ void column_sum_kernel(int64_t rows, int64_t cols, int64_t rows_per_slice,
                                  const T* matrix, float* partials) {
  __shared__ float lane_sums[kColumnSumLanes][kColumnSumWidth + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnSumWidth + threadIdx.x;
  const int64_t first_row = static_cast<int64_t>(blockIdx.y) * rows_per_slice;
  const int64_t end_row = first_row + rows_per_slice < rows ? first_row + rows_per_slice : rows;
  float sum = 0.f;
  if (col < cols) {
    for (int64_t row = first_row + threadIdx.y; row < end_row; row += kColumnSumLanes) {
      sum += to_f32(matrix[row * cols + col]);
    }
  }
  lane_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.f;
    for (int lane = 0; lane < kColumnSumLanes; ++lane)
      total += lane_sums[lane][threadIdx.x];
    partials[blockIdx.y * cols + col] = total;
  }
}

// ---------------------------------------------------------------------------------------
// Launchers

template <typename TOut>
void splitk_reduce_launch(int splits, int64_t count, const float* partials, TOut* out,
                          bool accumulate, cudaStream_t stream) {
  if (count == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  launch(splitk_reduce_kernel<TOut>, dim3(static_cast<unsigned>(blocks < 4096 ? blocks : 4096)),
         dim3(kThreads), 0, stream, splits, count, partials, out, accumulate);
}

// Row slices for column_sum_launch; the partials need slices * cols floats.
inline int column_sum_slices(int64_t rows, int max_slices = 64) {
  const int64_t slices = (rows + 1023) / 1024;
  return static_cast<int>(slices < 1 ? 1 : (slices > max_slices ? max_slices : slices));
}

// sums[col] (+)= sum over rows of matrix[row * cols + col]; partials: slices * cols floats.
template <typename T>
void column_sum_launch(int64_t rows, int64_t cols, const T* matrix, int slices, float* partials,
                       float* sums, bool accumulate, cudaStream_t stream) {
  if (cols == 0) return;
  const int64_t rows_per_slice = (rows + slices - 1) / slices;
  const dim3 grid(static_cast<unsigned>((cols + kColumnSumWidth - 1) / kColumnSumWidth),
                  static_cast<unsigned>(slices));
  launch(column_sum_kernel<T>, grid, dim3(kColumnSumWidth, kColumnSumLanes), 0, stream, rows, cols,
         rows_per_slice < 1 ? int64_t{1} : rows_per_slice, matrix, partials);
  splitk_reduce_launch(slices, cols, partials, sums, accumulate, stream);
}

}  // namespace engine::cuda
