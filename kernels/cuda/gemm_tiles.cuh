// The GEMM engines behind conv2d and linear:
//   gemm_fp32_kernel  fp32 SIMT, 128x128 block tile, 8x8 outputs per thread, exact fp32 math;
//   gemm_mma_kernel   tensor cores, 128x128 block tile, eight warps of 32x64, fp32 accumulate:
//                     Bf16Mma (ldmatrix + mma.sync m16n8k16) for bf16 tensors, Tf32Mma
//                     (m16n8k8, operands rounded by cvt.rna.tf32.f32; ldmatrix for tiles
//                     stored along K, 32-bit loads for the others) for f32 under Fp32Math::tf32.
// Both read their operands through the Row/K cursors of gemm_operands.cuh and conv_operands.cuh
// (each block works out its rows' cursors once, into shared memory), hand results to a store
// functor (gemm_epilogue.cuh), and split K over blockIdx.z: split z covers
// [z * k_per_split, (z + 1) * k_per_split); a store may then finish its tile once all splits
// have stored (store_finishes_tile: the split-K sum by the last split to finish). They feed
// their shared tiles (gemm_pipeline.cuh) in one of two ways, each with one barrier per K tile:
//   through registers (double_buffered_k_loop): the next K tile is loaded element by element
//     while the FMA or tensor units work on the current one from the other of two stages;
//     the fp32 engine, and the tensor-core engine where 16-byte loads do not fit (the stem,
//     odd channel counts);
//   by cp.async (multistage_k_loop): 16-byte vectors go straight to shared memory, two K tiles
//     in flight while the tensor cores work on a third (kMmaAsyncStages), no registers held
//     for them; the tensor-core engine where its operands allow 16-byte loads.
//
// What one trip through the main loop issues, and the engines this one replaced:
// docs/kernel-tuning.md (tools/sass_loop_stats.py, bench/results/sass-cuda-*.txt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/gemm_choice.h"
#include "kernels/cuda/gemm_epilogue.cuh"
#include "kernels/cuda/gemm_operand_transform.cuh"
#include "kernels/cuda/gemm_pipeline.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/warp_mma.cuh"
#include "kernels/fp32_math.h"

namespace engine::cuda {

// ---------------------------------------------------------------------------------------
// fp32 SIMT

constexpr int kFp32TileM = 128, kFp32TileN = 128, kFp32TileK = 8;
constexpr int kFp32Threads = 256;  // 16 x 16, each 8 x 8 outputs
// A thread's 8 rows (columns) are two runs of 4, half a tile apart: its float4 reads of a
// shared row then fall on distinct banks across a quarter warp.
constexpr int kFp32Half = kFp32TileM / 2;
constexpr int kFp32Pad = 4;  // row padding: the tile stores of 8 k lanes fall on 8 banks

template <typename AOperand, typename BOperand, typename Store>
__global__ void __launch_bounds__(kFp32Threads, 2)
    gemm_fp32_kernel(int32_t m_size, int32_t n_size, int32_t k_size, int32_t k_per_split,
                     AOperand a, BOperand b, Store store) {
  using ALoader = TileLoader<kFp32TileM, kFp32TileK, kFp32Threads, AOperand, float>;
  using BLoader = TileLoader<kFp32TileN, kFp32TileK, kFp32Threads, BOperand, float>;
  __shared__ __align__(16) float a_tile[2][kFp32TileK][kFp32TileM + kFp32Pad];
  __shared__ __align__(16) float b_tile[2][kFp32TileK][kFp32TileN + kFp32Pad];
  __shared__ typename AOperand::Row a_rows[kFp32TileM];
  __shared__ typename BOperand::Row b_rows[kFp32TileN];
  const int32_t m0 = static_cast<int32_t>(blockIdx.x) * kFp32TileM;
  const int32_t n0 = static_cast<int32_t>(blockIdx.y) * kFp32TileN;
  int32_t k_begin, k_end;
  split_range(k_size, k_per_split, k_begin, k_end);
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;

  prepare_rows<kFp32TileM, kFp32Threads>(a, m0, m_size, a_rows);
  prepare_rows<kFp32TileN, kFp32Threads>(b, n0, n_size, b_rows);
  __syncthreads();
  ALoader a_loader;
  BLoader b_loader;
  const auto put = [](float(&tile)[kFp32TileK][kFp32TileM + kFp32Pad]) {
    return [&tile](int row, int k, float value) { tile[k][row] = value; };
  };

  float acc[8][8] = {};
  double_buffered_k_loop<kFp32TileK>(
      k_begin, k_end, TileFeed{a_loader, a, a_rows, a_tile, put},
      TileFeed{b_loader, b, b_rows, b_tile, put}, [&](int stage) {
#pragma unroll
        for (int k = 0; k < kFp32TileK; ++k) {
          float a_values[8], b_values[8];
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const float4 a4 =
                *reinterpret_cast<const float4*>(&a_tile[stage][k][half * kFp32Half + ty * 4]);
            const float4 b4 =
                *reinterpret_cast<const float4*>(&b_tile[stage][k][half * kFp32Half + tx * 4]);
            a_values[half * 4 + 0] = a4.x;
            a_values[half * 4 + 1] = a4.y;
            a_values[half * 4 + 2] = a4.z;
            a_values[half * 4 + 3] = a4.w;
            b_values[half * 4 + 0] = b4.x;
            b_values[half * 4 + 1] = b4.y;
            b_values[half * 4 + 2] = b4.z;
            b_values[half * 4 + 3] = b4.w;
          }
#pragma unroll
          for (int i = 0; i < 8; ++i) {
#pragma unroll
            for (int j = 0; j < 8; ++j)
              acc[i][j] = fmaf(a_values[i], b_values[j], acc[i][j]);
          }
        }
      });
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int32_t m = m0 + (i / 4) * kFp32Half + ty * 4 + i % 4;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int32_t n = n0 + (j / 4) * kFp32Half + tx * 4 + j % 4;
      if (m < m_size && n < n_size) store(static_cast<int>(blockIdx.z), m, n, acc[i][j]);
    }
  }
  if constexpr (store_finishes_tile<Store>())
    store.template finish_tile<kFp32TileM, kFp32TileN>(m0, m_size, n0, n_size);
}

// ---------------------------------------------------------------------------------------
// Tensor cores: bf16 (mma.sync m16n8k16) and tf32 (m16n8k8), fp32 accumulate (warp_mma.cuh)

constexpr int kMmaTileM = 128, kMmaTileN = 128;
constexpr int kMmaThreads = 256;  // 4 x 2 warps, each 32 x 64 = 2 x 8 tiles of m16n8
// Stages of the cp.async pipeline (16-byte loads): 64 KiB of shared memory a block, so two
// blocks fit an SM of sm_80 (164 KiB) as of sm_90 (228 KiB), the most the registers allow.
constexpr int kMmaAsyncStages = 3;
// Blocks of kMmaThreads an SM: the registers allow it (tests/cuda_budget/budget.tsv, min_blocks)
// and MmaKernelShape asserts the shared memory does.
constexpr int kMmaMinBlocksPerSm = 2;

// A block tile of the tensor-core engine: kWarpsM x kWarpsN warps of 32 x 64 outputs each.
// 128 x 128 is the default; the smaller ones waste less of a tile where N (or M) is small
// (layer1's 64 output channels fill half of a 128-wide tile) and give more blocks where output
// tiles are few. The staged epilogue's fp32 rows are padded by 8 floats, so that the 8-byte
// writes of a half warp (4 rows x 4 column pairs) fall on 32 distinct banks.
template <int kWarpsMValue, int kWarpsNValue>
struct BlockTile {
  static constexpr int kWarpsM = kWarpsMValue, kWarpsN = kWarpsNValue;
  static constexpr int kM = 32 * kWarpsM, kN = 64 * kWarpsN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kStagedLd = kN + 8;
};
using Block128x128 = BlockTile<4, 2>;
using Block128x64 = BlockTile<4, 1>;
using Block64x128 = BlockTile<2, 2>;
using Block64x64 = BlockTile<2, 1>;
static_assert(Block128x128::kM == kMmaTileM && Block128x128::kN == kMmaTileN &&
              Block128x128::kThreads == kMmaThreads);

// What the element type fixes. Both keep 64 bytes of K in a shared row and 32 bytes of K per
// mma, so tiles, pipeline and ldmatrix addressing are the same in bytes.
struct Bf16Mma {
  using Element = __nv_bfloat16;
  static constexpr int kTileK = 32, kStepK = 16;  // K per block tile, per mma
  static constexpr int kVector = 8;               // elements per 16-byte load
  // ldmatrix.trans reads a [k][row] tile's 16-bit elements into mma's layout.
  static constexpr bool kLdmatrixTransposes = true;
  // Row padding against bank conflicts: 16 bytes, an odd count of 16 bytes a row either way.
  static constexpr int skew(bool /*along_k*/) { return 8; }
  __device__ __forceinline__ static uint32_t operand(uint32_t bits) { return bits; }
  template <int kTilesA, int kTilesB>
  __device__ __forceinline__ static void mma(float (&d)[kTilesA][kTilesB][4],
                                             const uint32_t (&a)[kTilesA][4],
                                             const uint32_t (&b)[kTilesB][2]) {
    mma_m16n8k16_bf16_tile(d, a, b);
  }
};

struct Tf32Mma {
  using Element = float;
  static constexpr int kTileK = 16, kStepK = 8;
  static constexpr int kVector = 4;
  // .trans would split 32-bit elements: [k][row] tiles are read element by element.
  static constexpr bool kLdmatrixTransposes = false;
  // [row][k]: rows of 20 (80 bytes, odd in 16 bytes, for ldmatrix); [k][row]: rows of 136,
  // 8 banks apart, so the 4 k rows x 8 rows of one element read fall on 32 distinct banks.
  static constexpr int skew(bool along_k) { return along_k ? 4 : 8; }
  // fp32 bits rounded to nearest tf32 (mma itself would drop the low 13 bits).
  __device__ __forceinline__ static uint32_t operand(uint32_t bits) { return to_tf32(bits); }
  template <int kTilesA, int kTilesB>
  __device__ __forceinline__ static void mma(float (&d)[kTilesA][kTilesB][4],
                                             const uint32_t (&a)[kTilesA][4],
                                             const uint32_t (&b)[kTilesB][2]) {
    mma_m16n8k8_tf32_tile(d, a, b);
  }
};

// One stage of an operand's shared tile, laid out along the operand's contiguous index so
// that a loaded vector is one 16-byte store: [row][k] for an operand contiguous along k,
// else [k][row] (which ldmatrix then reads transposed, or tf32 reads element by element).
template <typename Math, int kRows, bool kAlongKLayout>
struct MmaTile {
  using Element = typename Math::Element;
  static constexpr bool kAlongK = kAlongKLayout;
  static constexpr bool kLdmatrix = kAlongK || Math::kLdmatrixTransposes;
  static constexpr int kLd = (kAlongK ? Math::kTileK : kRows) + Math::skew(kAlongK);
  static constexpr int kRowBytes = kLd * static_cast<int>(sizeof(Element));
  static_assert(kRowBytes % 16 == 0, "MmaTile rows start 16-byte aligned (cp.async, ldmatrix)");
  // ldmatrix reads 8 rows of 16 bytes per matrix: an odd count of 16 bytes apart puts them on
  // distinct bank groups.
  static_assert(!kLdmatrix || kRowBytes / 16 % 2 == 1, "ldmatrix rows: odd in 16 bytes");
  static_assert(kLdmatrix || kLd % 32 == 8, "element reads: k rows 8 banks apart");
  Element data[kAlongK ? kRows : Math::kTileK][kLd];
  // Bytes from element (row, k) to (row, k + dk), and to (row + dr, k).
  static constexpr int k_bytes(int dk) {
    return (kAlongK ? dk : dk * kLd) * static_cast<int>(sizeof(Element));
  }
  static constexpr int row_bytes(int dr) {
    return (kAlongK ? dr * kLd : dr) * static_cast<int>(sizeof(Element));
  }
  __device__ __forceinline__ Element* at(int row, int k) {
    if constexpr (kAlongK) {
      return &data[row][k];
    } else {
      return &data[k][row];
    }
  }
};

// One warp's fragments of an operand at one K step: A's two m16 tiles (frag[i][0..3]) or B's
// eight n8 tiles (frag[j][0..1]) from rows [row0, row0 + 32 or 64) of a stage's tile, in
// mma's register layout, passed through Math::operand. The constructor works out this lane's
// addresses at stage 0, k 0; stages and K steps are fixed byte offsets from them.
//   ldmatrix .x4 (tile.kLdmatrix): one per m16 tile of A, per two n8 tiles of B. Lanes 8j ..
//     8j+7 give matrix j's 8 rows, the matrices in mma's register order: for A rows 0-7 then
//     8-15 of the first half of the step's K, then the same of the second half; for B the two
//     halves of K of rows (n) 0-7, then the same of rows 8-15. A [k][row] tile has k as its
//     memory rows: its lanes step along k instead, and ldmatrix transposes.
//   element reads (tf32 [k][row] tiles): one 32-bit load a register, at A's (row group (+8),
//     k t (+4)) and B's (k t (+4), column group) with group = lane / 4, t = lane % 4.
template <typename Math, typename Tile, bool kIsA>
struct FragmentReader {
  static constexpr int kTiles = kIsA ? 2 : 8, kRegisters = kIsA ? 4 : 2;
  static constexpr int kLdmatrixLoads = kIsA ? 2 : 4;
  static constexpr int kHalfK = Math::kStepK / 2;
  SharedAddress base[Tile::kLdmatrix ? kLdmatrixLoads : 1];

  __device__ __forceinline__ FragmentReader(Tile& tile, int row0, int lane) {
    if constexpr (Tile::kLdmatrix) {
      const int matrix = lane / 8, row = lane % 8;
      const int row_offset = (kIsA ? matrix & 1 : matrix >> 1) * 8;
      const int k_offset = (kIsA ? matrix >> 1 : matrix & 1) * kHalfK;
#pragma unroll
      for (int l = 0; l < kLdmatrixLoads; ++l) {
        const int rows = row0 + 16 * l + row_offset;
        base[l] = shared_address(Tile::kAlongK ? tile.at(rows + row, k_offset)
                                               : tile.at(rows, k_offset + row));
      }
    } else {
      base[0] = shared_address(tile.at(row0 + lane / 4, lane % 4));
    }
  }

  __device__ __forceinline__ void read(uint32_t (&frag)[kTiles][kRegisters], int stage_bytes,
                                       int k) const {
    const int offset = stage_bytes + Tile::k_bytes(k);
    if constexpr (Tile::kLdmatrix) {
      SharedAddress rows[kLdmatrixLoads];
#pragma unroll
      for (int l = 0; l < kLdmatrixLoads; ++l)
        rows[l] = base[l] + offset;
      uint32_t r[kLdmatrixLoads][4];
      ldmatrix_x4_each<!Tile::kAlongK>(r, rows);
#pragma unroll
      for (int l = 0; l < kLdmatrixLoads; ++l) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if constexpr (kIsA) {
            frag[l][e] = Math::operand(r[l][e]);
          } else {
            frag[2 * l + e / 2][e % 2] = Math::operand(r[l][e]);
          }
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < kTiles; ++i) {
#pragma unroll
        for (int r = 0; r < kRegisters; ++r) {
          // A: register r at row + 8 (r % 2), k + 4 (r / 2); B: k + 4 r; tiles 16 (8) rows on.
          const int rows = kIsA ? 16 * i + 8 * (r % 2) : 8 * i;
          const int ks = kIsA ? kHalfK * (r / 2) : kHalfK * r;
          frag[i][r] = Math::operand(
              load_shared_b32(base[0] + offset + Tile::row_bytes(rows) + Tile::k_bytes(ks)));
        }
      }
    }
  }
};

// gemm_mma_kernel's shared memory (dynamic: over 48 KiB with cp.async's three stages): the
// stages of each operand's tile, which the staged epilogue then reuses for the block's results,
// and the cursors of the block's rows.
template <int kStages, typename Block, typename ATile, typename BTile, typename ARow, typename BRow>
struct MmaStorage {
  static constexpr size_t kTileBytes = kStages * (sizeof(ATile) + sizeof(BTile));
  static constexpr size_t kStagedBytes = sizeof(float) * Block::kM * Block::kStagedLd;
  alignas(16) unsigned char tiles[kTileBytes > kStagedBytes ? kTileBytes : kStagedBytes];
  ARow a_rows[Block::kM];
  BRow b_rows[Block::kN];
  __device__ __forceinline__ ATile* a() { return reinterpret_cast<ATile*>(tiles); }
  __device__ __forceinline__ BTile* b() {
    return reinterpret_cast<BTile*>(tiles + kStages * sizeof(ATile));
  }
  __device__ __forceinline__ float (*staged())[Block::kStagedLd] {
    return reinterpret_cast<float(*)[Block::kStagedLd]>(tiles);
  }
};

// How gemm_mma_kernel<Math, kVector> feeds its tiles: 16-byte vectors by cp.async through
// kMmaAsyncStages stages, element loads (the stem, odd channel counts) through registers and
// two stages.
template <typename Math, int kVector, typename AOperand, typename BOperand,
          typename Block = Block128x128>
struct MmaKernelShape {
  static constexpr bool kAsync = kVector == Math::kVector;
  static_assert(kAsync || kVector == 1, "the tensor-core engine loads 16-byte vectors or elements");
  static constexpr int kStages = kAsync ? kMmaAsyncStages : 2;
  using ATile = MmaTile<Math, Block::kM, AOperand::kContiguousAlongK>;
  using BTile = MmaTile<Math, Block::kN, BOperand::kContiguousAlongK>;
  using Storage =
      MmaStorage<kStages, Block, ATile, BTile, typename AOperand::Row, typename BOperand::Row>;
  static_assert(sizeof(ATile) % 16 == 0 && sizeof(BTile) % 16 == 0,
                "every stage starts 16-byte aligned, as ldmatrix and cp.async need");
  // The blocks per SM that tests/cuda_budget holds the registers to must fit in shared memory
  // too: sm_80 has 164 KiB an SM (sm_90 228), and each block takes 1 KiB more for the system.
  static_assert(kMmaMinBlocksPerSm * (sizeof(Storage) + 1024) <= 164 * 1024,
                "a block's shared memory leaves room for kMmaMinBlocksPerSm blocks an SM");
};

template <typename Math, int kVector, typename AOperand, typename BOperand, typename Store,
          typename Block = Block128x128>
__global__ void __launch_bounds__(Block::kThreads)
    gemm_mma_kernel(int32_t m_size, int32_t n_size, int32_t k_size, int32_t k_per_split, AOperand a,
                    BOperand b, Store store, bool staged_epilogue) {
  using Shape = MmaKernelShape<Math, kVector, AOperand, BOperand, Block>;
  constexpr int kTileM = Block::kM, kTileN = Block::kN, kThreads = Block::kThreads;
  using ATile = typename Shape::ATile;
  using BTile = typename Shape::BTile;
  using Storage = typename Shape::Storage;
  using Element = typename Math::Element;
  constexpr int kTileK = Math::kTileK;
  DYNAMIC_SHARED_MEMORY(Storage, storage);
  ATile* const a_tile = storage->a();
  BTile* const b_tile = storage->b();

  const int32_t m0 = static_cast<int32_t>(blockIdx.x) * kTileM;
  const int32_t n0 = static_cast<int32_t>(blockIdx.y) * kTileN;
  int32_t k_begin, k_end;
  split_range(k_size, k_per_split, k_begin, k_end);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m = warp / Block::kWarpsN, warp_n = warp % Block::kWarpsN;

  prepare_rows<kTileM, kThreads>(a, m0, m_size, storage->a_rows);
  prepare_rows<kTileN, kThreads>(b, n0, n_size, storage->b_rows);
  __syncthreads();

  const FragmentReader<Math, ATile, true> a_reader(a_tile[0], warp_m * 32, lane);
  const FragmentReader<Math, BTile, false> b_reader(b_tile[0], warp_n * 64, lane);
  float acc[2][8][4] = {};  // [m16 tile][n8 tile][mma's d registers]
  const auto compute = [&](int stage) {
#pragma unroll
    for (int k = 0; k < kTileK; k += Math::kStepK) {
      uint32_t a_frag[2][4], b_frag[8][2];
      a_reader.read(a_frag, stage * static_cast<int>(sizeof(ATile)), k);
      b_reader.read(b_frag, stage * static_cast<int>(sizeof(BTile)), k);
      Math::mma(acc, a_frag, b_frag);
    }
  };
  if constexpr (Shape::kAsync) {
    using ALoader = AsyncTileLoaderFor<kTileM, kTileK, kThreads, AOperand, kVector, Shape::kStages>;
    using BLoader = AsyncTileLoaderFor<kTileN, kTileK, kThreads, BOperand, kVector, Shape::kStages>;
    ALoader a_loader;  // a transforming one keeps which vectors it zero-filled
    BLoader b_loader;
    multistage_k_loop<Shape::kStages, kTileK>(
        k_begin, k_end, AsyncTileFeed{a_loader, a, storage->a_rows, a_tile},
        AsyncTileFeed{b_loader, b, storage->b_rows, b_tile}, compute);
  } else {
    using ALoader = TileLoader<kTileM, kTileK, kThreads, AOperand, Element>;
    using BLoader = TileLoader<kTileN, kTileK, kThreads, BOperand, Element>;
    ALoader a_loader;
    BLoader b_loader;
    const auto put = [](auto& tile) {
      return [&tile](int row, int k, Element value) { *tile.at(row, k) = value; };
    };
    double_buffered_k_loop<kTileK>(k_begin, k_end,
                                   TileFeed{a_loader, a, storage->a_rows, a_tile, put},
                                   TileFeed{b_loader, b, storage->b_rows, b_tile, put}, compute);
  }
  const int group = lane / 4, pair = 2 * (lane % 4);
  if (staged_epilogue) {
    // Through shared memory: the accumulators into an fp32 tile over the operands' stages
    // (every warp done with them, no copy in flight), then 16-byte runs of a row to the store,
    // consecutive threads along a row: one vector access where the direct path makes 8 (bf16).
    if constexpr (Shape::kAsync) cp_async_wait<0>();
    __syncthreads();
    float(*staged)[Block::kStagedLd] = storage->staged();
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int row = warp_m * 32 + i * 16 + group, col = warp_n * 64 + j * 8 + pair;
        *reinterpret_cast<float2*>(&staged[row][col]) = make_float2(acc[i][j][0], acc[i][j][1]);
        *reinterpret_cast<float2*>(&staged[row + 8][col]) = make_float2(acc[i][j][2], acc[i][j][3]);
      }
    }
    __syncthreads();
    constexpr int kWidth = Store::kVectorWidth, kRuns = kTileN / kWidth;
    for (int run = threadIdx.x; run < kTileM * kRuns; run += kThreads) {
      const int row = run / kRuns, col = run % kRuns * kWidth;
      const int32_t m = m0 + row, n = n0 + col;
      if (m >= m_size || n >= n_size) continue;
      float values[kWidth];
#pragma unroll
      for (int v = 0; v < kWidth; v += 4)
        *reinterpret_cast<float4*>(&values[v]) =
            *reinterpret_cast<const float4*>(&staged[row][col + v]);
      if (n + kWidth <= n_size) {
        store.store_vector(static_cast<int>(blockIdx.z), m, n, values);
      } else {
        for (int v = 0; v < kWidth && n + v < n_size; ++v)
          store(static_cast<int>(blockIdx.z), m, n + v, values[v]);
      }
      if constexpr (store_rewrites_staged_tile<Store>()) {
#pragma unroll
        for (int v = 0; v < kWidth; v += 4)
          *reinterpret_cast<float4*>(&staged[row][col + v]) =
              *reinterpret_cast<const float4*>(&values[v]);
      }
    }
    // after_staged_tile reads the columns other threads rewrote.
    if constexpr (store_rewrites_staged_tile<Store>()) __syncthreads();
    if constexpr (store_reads_staged_tile<Store>())
      store.template after_staged_tile<Block>(staged, m0, m_size, n0, n_size);
    if constexpr (store_finishes_tile<Store>())
      store.template finish_tile<kTileM, kTileN>(m0, m_size, n0, n_size);
    return;
  }
  // Straight from the accumulators: d[0], d[1] at (row lane / 4, columns 2 (lane % 4) and +1)
  // of each m16n8 tile, d[2], d[3] eight rows below.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int32_t m = m0 + warp_m * 32 + i * 16 + group + 8 * (r / 2);
        const int32_t n = n0 + warp_n * 64 + j * 8 + pair + r % 2;
        if (m < m_size && n < n_size) store(static_cast<int>(blockIdx.z), m, n, acc[i][j][r]);
      }
    }
  }
  if constexpr (store_finishes_tile<Store>())
    store.template finish_tile<kTileM, kTileN>(m0, m_size, n0, n_size);
}

// ---------------------------------------------------------------------------------------
// Launcher

// How many K-splits a GEMM gets: enough blocks to fill the GPU (target_blocks: two an SM of
// an H100/H200's 132) when the output tiles alone are too few, never a split thinner than
// min_k_per_split, at most max_splits (32 by default: each split's partials are a whole
// output). A pure function, unit-tested on the CPU.
constexpr int kSplitTargetBlocks = 264;
constexpr int64_t kMinKPerSplit = 256;
inline int choose_split_k(int64_t m, int64_t n, int64_t k, int tile_m, int tile_n,
                          int target_blocks = kSplitTargetBlocks,
                          int64_t min_k_per_split = kMinKPerSplit, int max_splits = 32) {
  const int64_t tiles = ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
  if (tiles >= target_blocks || k <= min_k_per_split) return 1;
  int64_t splits = (target_blocks + tiles - 1) / tiles;
  splits = splits < k / min_k_per_split ? splits : k / min_k_per_split;
  splits = splits < max_splits ? splits : max_splits;
  return static_cast<int>(splits < 1 ? 1 : splits);
}

// The kernels' 32-bit indices: every dimension below 2^31 - 2^16 (throws otherwise). The
// margin is for the sums the kernels form past a dimension's end in int32: a tile's first row
// plus up to 127, the next K tile's start plus up to 31, a split's start plus its share of K
// (at most K + 32 splits * 32).
constexpr int64_t kGemmDimLimit = (int64_t{1} << 31) - (int64_t{1} << 16);
inline void check_gemm_dims(int64_t m, int64_t n, int64_t k) {
  if (m >= kGemmDimLimit || n >= kGemmDimLimit || k >= kGemmDimLimit) {
    throw std::invalid_argument("gemm_launch: a GEMM of " + std::to_string(m) + " x " +
                                std::to_string(n) + " x " + std::to_string(k) +
                                " exceeds the kernels' 32-bit indices (each dimension < " +
                                std::to_string(kGemmDimLimit) + ")");
  }
}

// K per split for `splits`, rounded up to whole K-tiles so splits never share a tile.
inline int64_t k_per_split(int64_t k, int splits, int tile_k) {
  const int64_t per_split = (k + splits - 1) / splits;
  return (per_split + tile_k - 1) / tile_k * tile_k;
}

// The tensor-core engine of Math over (m, n, k) with `splits` K-splits: 16-byte loads where
// both operands allow them and no vector straddles the matrix's end along its contiguous
// index (k for one contiguous along k, else its rows), element loads otherwise; the epilogue
// and (bf16, 16-byte loads) the block tile as `choice` says (gemm_choice.h).
template <typename Math, typename AOperand, typename BOperand, typename Store>
void mma_gemm_launch(int64_t m, int64_t n, int64_t k, AOperand a, BOperand b, Store store,
                     int splits, cudaStream_t stream, const GemmChoice& choice) {
  const bool staged =
      resolve_epilogue(choice.epilogue) == GemmEpilogue::staged && store.vector_fits();
  const int64_t per_split = k_per_split(k, splits, Math::kTileK);
  const auto fits = [&](const auto& operand, int64_t rows) {
    return operand.vectorizable(Math::kVector) &&
           (operand.kContiguousAlongK ? k : rows) % Math::kVector == 0;
  };
  const auto run = [&](auto vector, auto block) {
    constexpr int kVector = decltype(vector)::value;
    using Block = decltype(block);
    constexpr size_t smem_bytes =
        sizeof(typename MmaKernelShape<Math, kVector, AOperand, BOperand, Block>::Storage);
    const auto kernel = gemm_mma_kernel<Math, kVector, AOperand, BOperand, Store, Block>;
    const dim3 grid(static_cast<unsigned>((m + Block::kM - 1) / Block::kM),
                    static_cast<unsigned>((n + Block::kN - 1) / Block::kN),
                    static_cast<unsigned>(splits));
    allow_dynamic_shared_memory(kernel, smem_bytes);
    launch(kernel, grid, dim3(Block::kThreads), smem_bytes, stream, static_cast<int32_t>(m),
           static_cast<int32_t>(n), static_cast<int32_t>(k), static_cast<int32_t>(per_split), a, b,
           store, staged);
  };
  using Vector = std::integral_constant<int, Math::kVector>;
  if (!(fits(a, m) && fits(b, n))) {
    run(std::integral_constant<int, 1>{}, Block128x128{});
    return;
  }
  if constexpr (std::is_same_v<Math, Bf16Mma>) {
    switch (resolve_tile(choice.tile, m, n)) {
      case GemmTile::t128x64:
        run(Vector{}, Block128x64{});
        return;
      case GemmTile::t64x128:
        run(Vector{}, Block64x128{});
        return;
      case GemmTile::t64x64:
        run(Vector{}, Block64x64{});
        return;
      default:
        break;
    }
  }
  run(Vector{}, Block128x128{});
}

// C = A B^T over (m, n, k) with `splits` K-splits (the store must handle split > 0 when
// splits > 1). T and fp32_math pick the engine: float -> fp32 SIMT (exact) or tf32 tensor
// cores (tf32), __nv_bfloat16 -> bf16 tensor cores; `choice` the tensor-core engines' epilogue
// and tile (the fp32 engine has one of each). The kernels index with 32 bits: a GEMM dimension
// of kGemmDimLimit or more is refused.
template <typename T, typename AOperand, typename BOperand, typename Store>
void gemm_launch(int64_t m, int64_t n, int64_t k, AOperand a, BOperand b, Store store, int splits,
                 cudaStream_t stream, Fp32Math fp32_math = Fp32Math::exact,
                 const GemmChoice& choice = {}) {
  if (m == 0 || n == 0) return;
  check_gemm_dims(m, n, k);
  if constexpr (std::is_same_v<T, float>) {
    if (fp32_math == Fp32Math::tf32) {
      mma_gemm_launch<Tf32Mma>(m, n, k, a, b, store, splits, stream, choice);
      return;
    }
    const int64_t per_split = k_per_split(k, splits, kFp32TileK);
    const dim3 grid(static_cast<unsigned>((m + kFp32TileM - 1) / kFp32TileM),
                    static_cast<unsigned>((n + kFp32TileN - 1) / kFp32TileN),
                    static_cast<unsigned>(splits));
    launch(gemm_fp32_kernel<AOperand, BOperand, Store>, grid, dim3(kFp32Threads), 0, stream,
           static_cast<int32_t>(m), static_cast<int32_t>(n), static_cast<int32_t>(k),
           static_cast<int32_t>(per_split), a, b, store);
  } else {
    mma_gemm_launch<Bf16Mma>(m, n, k, a, b, store, splits, stream, choice);
  }
}

}  // namespace engine::cuda
