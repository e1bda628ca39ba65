// The two GEMM engines behind conv2d and linear:
//   gemm_fp32_kernel  fp32 SIMT, 64x64 block tile, 4x4 outputs per thread, exact fp32 math;
//   gemm_wmma_kernel  bf16 tensor cores (WMMA m16n16k16, fp32 accumulate), 64x64 block tile,
//                     four warps of 32x32.
// Both take operand functors (gemm_operands.cuh, conv_operands.cuh) and a store functor
// (gemm_epilogue.cuh), and split K over blockIdx.z: split z covers
// [z * k_per_split, (z + 1) * k_per_split).
#pragma once

#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch.h"

namespace engine::cuda {

// Fills a tile_rows x tile_k shared tile (stored [k][row] or [row][k] by Put) from an operand,
// zero outside rows < row_limit and k < k_end. Consecutive threads take consecutive k when
// the operand is contiguous along k, else consecutive rows, so global loads coalesce.
template <int kTileRows, int kTileK, int kThreads, typename Operand, typename Put>
__device__ __forceinline__ void load_tile(const Operand& operand, int64_t row0, int64_t row_limit,
                                          int64_t k0, int64_t k_end, Put put) {
  for (int e = threadIdx.x; e < kTileRows * kTileK; e += kThreads) {
    int row, k;
    if constexpr (Operand::kContiguousAlongK) {
      k = e % kTileK;
      row = e / kTileK;
    } else {
      row = e % kTileRows;
      k = e / kTileRows;
    }
    const int64_t global_row = row0 + row, global_k = k0 + k;
    const bool inside = global_row < row_limit && global_k < k_end;
    put(row, k, inside ? to_f32(operand(global_row, global_k)) : 0.f);
  }
}

// ---------------------------------------------------------------------------------------
// fp32 SIMT

constexpr int kFp32TileM = 64, kFp32TileN = 64, kFp32TileK = 16;
constexpr int kFp32ThreadM = 4, kFp32ThreadN = 4;
constexpr int kFp32Threads = (kFp32TileM / kFp32ThreadM) * (kFp32TileN / kFp32ThreadN);

template <typename AOperand, typename BOperand, typename Store>
__global__ void __launch_bounds__(kFp32Threads)
    gemm_fp32_kernel(int64_t m_size, int64_t n_size, int64_t k_size, int64_t k_per_split,
                     AOperand a, BOperand b, Store store) {
  __shared__ float a_tile[kFp32TileK][kFp32TileM];
  __shared__ float b_tile[kFp32TileK][kFp32TileN];
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kFp32TileM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * kFp32TileN;
  const int split = static_cast<int>(blockIdx.z);
  const int64_t k_begin = split * k_per_split;
  const int64_t k_end = k_begin + k_per_split < k_size ? k_begin + k_per_split : k_size;
  const int thread_n = threadIdx.x % (kFp32TileN / kFp32ThreadN);
  const int thread_m = threadIdx.x / (kFp32TileN / kFp32ThreadN);

  float acc[kFp32ThreadM][kFp32ThreadN] = {};
  for (int64_t k0 = k_begin; k0 < k_end; k0 += kFp32TileK) {
    load_tile<kFp32TileM, kFp32TileK, kFp32Threads>(
        a, m0, m_size, k0, k_end, [&](int row, int k, float v) { a_tile[k][row] = v; });
    load_tile<kFp32TileN, kFp32TileK, kFp32Threads>(
        b, n0, n_size, k0, k_end, [&](int row, int k, float v) { b_tile[k][row] = v; });
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kFp32TileK; ++k) {
      float a_values[kFp32ThreadM], b_values[kFp32ThreadN];
#pragma unroll
      for (int i = 0; i < kFp32ThreadM; ++i)
        a_values[i] = a_tile[k][thread_m * kFp32ThreadM + i];
#pragma unroll
      for (int j = 0; j < kFp32ThreadN; ++j)
        b_values[j] = b_tile[k][thread_n * kFp32ThreadN + j];
#pragma unroll
      for (int i = 0; i < kFp32ThreadM; ++i) {
#pragma unroll
        for (int j = 0; j < kFp32ThreadN; ++j)
          acc[i][j] = fmaf(a_values[i], b_values[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kFp32ThreadM; ++i) {
    const int64_t m = m0 + thread_m * kFp32ThreadM + i;
#pragma unroll
    for (int j = 0; j < kFp32ThreadN; ++j) {
      const int64_t n = n0 + thread_n * kFp32ThreadN + j;
      if (m < m_size && n < n_size) store(split, m, n, acc[i][j]);
    }
  }
}

// ---------------------------------------------------------------------------------------
// bf16 tensor cores (WMMA)

constexpr int kWmmaTileM = 64, kWmmaTileN = 64, kWmmaTileK = 32;
constexpr int kWmmaThreads = 128;  // 2 x 2 warps, each 32 x 32 = 2 x 2 fragments
constexpr int kWmmaSkew = 8;       // row padding (elements) against shared-memory bank conflicts

template <typename AOperand, typename BOperand, typename Store>
__global__ void __launch_bounds__(kWmmaThreads)
    gemm_wmma_kernel(int64_t m_size, int64_t n_size, int64_t k_size, int64_t k_per_split,
                     AOperand a, BOperand b, Store store) {
  namespace wmma = nvcuda::wmma;
  constexpr int kLd = kWmmaTileK + kWmmaSkew;
  constexpr int kOutLd = kWmmaTileN + 4;
  // a_tile is M x K row-major (matrix_a row_major); b_tile is N x K, which is K x N
  // column-major (matrix_b col_major). The fp32 output tile reuses nothing: 17 KiB.
  __shared__ __align__(32) __nv_bfloat16 a_tile[kWmmaTileM][kLd];
  __shared__ __align__(32) __nv_bfloat16 b_tile[kWmmaTileN][kLd];
  __shared__ __align__(32) float out_tile[kWmmaTileM][kOutLd];

  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kWmmaTileM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * kWmmaTileN;
  const int split = static_cast<int>(blockIdx.z);
  const int64_t k_begin = split * k_per_split;
  const int64_t k_end = k_begin + k_per_split < k_size ? k_begin + k_per_split : k_size;
  const int warp = threadIdx.x / 32;
  const int warp_m = warp / 2, warp_n = warp % 2;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::fill_fragment(acc[i][j], 0.f);
  }

  for (int64_t k0 = k_begin; k0 < k_end; k0 += kWmmaTileK) {
    load_tile<kWmmaTileM, kWmmaTileK, kWmmaThreads>(
        a, m0, m_size, k0, k_end,
        [&](int row, int k, float v) { a_tile[row][k] = __float2bfloat16(v); });
    load_tile<kWmmaTileN, kWmmaTileK, kWmmaThreads>(
        b, n0, n_size, k0, k_end,
        [&](int row, int k, float v) { b_tile[row][k] = __float2bfloat16(v); });
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kWmmaTileK; k += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a_frag[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b_frag[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        wmma::load_matrix_sync(a_frag[i], &a_tile[warp_m * 32 + i * 16][k], kLd);
        wmma::load_matrix_sync(b_frag[i], &b_tile[warp_n * 32 + i * 16][k], kLd);
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j)
          wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(&out_tile[warp_m * 32 + i * 16][warp_n * 32 + j * 16], acc[i][j],
                              kOutLd, wmma::mem_row_major);
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kWmmaTileM * kWmmaTileN; e += kWmmaThreads) {
    const int row = e / kWmmaTileN, col = e % kWmmaTileN;
    const int64_t m = m0 + row, n = n0 + col;
    if (m < m_size && n < n_size) store(split, m, n, out_tile[row][col]);
  }
}

// ---------------------------------------------------------------------------------------
// Launcher

// How many K-splits a GEMM gets: enough blocks to fill the GPU (target_blocks) when the
// output tiles alone are too few, never a split thinner than min_k_per_split, at most
// max_splits. A pure function, unit-tested on the CPU.
inline int choose_split_k(int64_t m, int64_t n, int64_t k, int tile_m, int tile_n,
                          int target_blocks = 264, int64_t min_k_per_split = 256,
                          int max_splits = 32) {
  const int64_t tiles = ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
  if (tiles >= target_blocks || k <= min_k_per_split) return 1;
  int64_t splits = (target_blocks + tiles - 1) / tiles;
  splits = splits < k / min_k_per_split ? splits : k / min_k_per_split;
  splits = splits < max_splits ? splits : max_splits;
  return static_cast<int>(splits < 1 ? 1 : splits);
}

// K per split for `splits`, rounded up to whole K-tiles so splits never share a tile.
inline int64_t k_per_split(int64_t k, int splits, int tile_k) {
  const int64_t per_split = (k + splits - 1) / splits;
  return (per_split + tile_k - 1) / tile_k * tile_k;
}

// C = A B^T over (m, n, k) with `splits` K-splits (the store must handle split > 0 when
// splits > 1). T picks the engine: float -> fp32 SIMT, __nv_bfloat16 -> WMMA.
template <typename T, typename AOperand, typename BOperand, typename Store>
void gemm_launch(int64_t m, int64_t n, int64_t k, AOperand a, BOperand b, Store store, int splits,
                 cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    const int64_t per_split = k_per_split(k, splits, kFp32TileK);
    const dim3 grid(static_cast<unsigned>((m + kFp32TileM - 1) / kFp32TileM),
                    static_cast<unsigned>((n + kFp32TileN - 1) / kFp32TileN),
                    static_cast<unsigned>(splits));
    launch(gemm_fp32_kernel<AOperand, BOperand, Store>, grid, dim3(kFp32Threads), 0, stream, m, n,
           k, per_split, a, b, store);
  } else {
    const int64_t per_split = k_per_split(k, splits, kWmmaTileK);
    const dim3 grid(static_cast<unsigned>((m + kWmmaTileM - 1) / kWmmaTileM),
                    static_cast<unsigned>((n + kWmmaTileN - 1) / kWmmaTileN),
                    static_cast<unsigned>(splits));
    launch(gemm_wmma_kernel<AOperand, BOperand, Store>, grid, dim3(kWmmaThreads), 0, stream, m, n,
           k, per_split, a, b, store);
  }
}

}  // namespace engine::cuda
