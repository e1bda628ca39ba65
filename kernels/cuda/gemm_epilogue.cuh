// Where GEMM results go: straight into the output (with bias and accumulation), or, for
// split-K, into per-split fp32 partials that splitk_reduce_kernel sums in a fixed order so
// results are deterministic. Also the column sums used for bias gradients.
//
// A store takes one result, operator()(split, m, n, acc), and for the tensor-core engine's
// staged epilogue (gemm_tiles.cuh) also a 16-byte run: store_vector(split, m, n, acc[]) puts
// kVectorWidth consecutive columns n.. of row m with one 16-byte access (and the same
// arithmetic per element), used only where vector_fits() held on the host.
#pragma once

#include <cstdint>

#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/launch.h"

namespace engine::cuda {

// 16 bytes of T (elementwise.cuh's pack and width): what one vector access of a staged store
// moves.
template <typename T>
using Vector16 = Pack<T, vector_width<T>()>;

// Whether a store also asks the staged epilogue for the block's whole tile: gemm_mma_kernel
// then calls store.after_staged_tile<Block>(staged, m0, m_size, n0, n_size) once its stores
// are done, every thread of the block (gemm_column_stats.cuh: BatchNorm's statistics).
template <typename Store>
constexpr bool store_reads_staged_tile() {
  if constexpr (requires { Store::kReadsStagedTile; }) {
    return Store::kReadsStagedTile;
  } else {
    return false;
  }
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

// partials[(split * rows + m) * cols + n] = acc
struct StoreSplitPartial {
  static constexpr int kVectorWidth = vector_width<float>();
  float* partials;
  int64_t rows;
  int64_t cols;
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
};

// out[i] = sum over splits of partials[split * count + i] (+ out[i] when accumulating).
template <typename TOut>
__global__ void splitk_reduce_kernel(int splits, int64_t count, const float* partials, TOut* out,
                                     bool accumulate) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    float sum = accumulate ? to_f32(out[i]) : 0.f;
    for (int split = 0; split < splits; ++split)
      sum += partials[split * count + i];
    out[i] = from_f32<TOut>(sum);
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
