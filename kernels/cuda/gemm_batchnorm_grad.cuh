// BatchNorm + ReLU's backward reduction done in the input-gradient convolution's staged
// epilogue (cuDNN's dgrad + drelu + dbn). The convolution computes g = dL/da for a = relu(...)
// of the BatchNorm's output, which it read; BatchNorm's backward then needs g' = g where a > 0
// (else 0) and per channel sum(g'), sum(g' (x - mean)) for the BatchNorm's input x. While the
// block's tile of g (rows = input pixels, columns = channels) sits in shared memory, this store
// writes g' instead of g and sums both per column, so batchnorm_backward_reduce never reads g
// and x back: BatchNorm's backward is its element-wise pass alone, reading g' as its dy without
// a mask. The mask comes from either
//   - x, recomputed through the transform the convolution read it by (a = relu(x * scale +
//     shift): a BatchNorm inside a residual block, whose output was never written); or
//   - a, stored (relu_output): a residual block's output, read as it is by the next block's
//     first convolution and by its identity branch, whose gradient (addend) is added first,
//     with the add's bits (StoreToMatrixAdding), so that g is the whole gradient at a.
//
// g is rounded to the output's dtype (after the addend) before it is gated and summed: the
// values as stored, so that the bits are those the unfused path gives (which reads the stored
// g). Each block sums its tile's valid rows per column in a fixed order, the row tiles'
// partials are merged in two levels in a fixed order (RowTileMerge, as the forward's
// statistics), plain fp32 sums, and the last block writes grad_sums and the parameter gradients
// through batchnorm_backward_write_channel, as batchnorm_backward_reduce's merge does.
//
// The sums read nothing from memory again (kRewritesStagedTile): each store, having loaded x
// (and a and the addend) in 16-byte runs and worked out g', leaves in the staged tile what the
// sums need of that element. In bf16 that is g' and x in one 32-bit word: g' is a bf16 value,
// whose fp32 bits end in 16 zeros, where x's bf16 bits go; the sums take both back exactly, so
// the bits are those of reading them again. In fp32 (tf32 math) the word holds g' and the sums
// read x again (from L2, where the store just read it). reread (ENGINE_GATED_SUMS, gemm_choice.h)
// keeps the staged tile's fp32 g and has the sums load x, a and the addend again and gate
// again, as before: the same bits, to time the difference on a GPU.
#pragma once

#include <cstdint>

#include "kernels/conv_input_value.h"
#include "kernels/cuda/batchnorm_reduce.cuh"
#include "kernels/cuda/gemm_column_stats.cuh"
#include "kernels/cuda/gemm_epilogue.cuh"

namespace engine::cuda {

// Where the epilogue's sums go: the blocks' partials [row tiles, n] of sum g' and sum g' (x -
// mean), the groups' [groups, n], the merge's counters, and the merged results.
struct BatchNormGradSumsTargets {
  float* part_dy = nullptr;
  float* part_dy_xmu = nullptr;
  float* group_dy = nullptr;
  float* group_dy_xmu = nullptr;
  RowTileMerge merge;
  BatchNormGradTargets grad;  // grad_sums, bias_grad, weight_grad; batch_stats' invstd
};

// StoreToMatrix<TOut> of the gated gradient that also sums it per column (kReadsStagedTile).
// x: the BatchNorm's input [m, n] (n = its channels); mean = batch_stats[0, n); the ReLU's
// mask from relu_output where set, else from relu_scale/relu_shift. Only the staged epilogue
// of the tensor-core engine without split K runs it (conv_backward_bn.cuh's path query).
template <typename TOut>
struct StoreGatedWithBatchNormGrad {
  static constexpr int kVectorWidth = StoreToMatrix<TOut>::kVectorWidth;
  static constexpr bool kReadsStagedTile = true;
  static constexpr bool kRewritesStagedTile = true;
  // Whether the staged word carries x beside g' (bf16), or g' alone (f32).
  static constexpr bool kStagesX = sizeof(TOut) == 2;
  StoreToMatrix<TOut> matrix;  // no bias, not accumulating: the sums are of what it writes
  const TOut* x = nullptr;
  const float* relu_scale = nullptr;
  const float* relu_shift = nullptr;
  const TOut* relu_output = nullptr;  // like x, or null (then relu_scale/relu_shift)
  const TOut* addend = nullptr;       // like x, or null; only with relu_output
  BatchNormGradSumsTargets targets;
  bool reread = false;  // GatedSums::reread: the sums load their inputs again

  // g as stored: rounded to TOut, after the addend with the add's bits where there is one.
  __device__ __forceinline__ static float stored(float acc, bool has_addend, TOut addend_value) {
    return has_addend ? to_f32(StoreToMatrixAdding<TOut>::add(acc, addend_value))
                      : to_f32(from_f32<TOut>(acc));
  }
  // g as stored, or 0 where the ReLU's output was not positive (NaN included):
  // batchnorm_reduce.cuh's load_gradient_through_relu on a's stored value, or its
  // gate_by_recomputed_relu on x's. at = m * ld + n.
  __device__ __forceinline__ float gated(float acc, float x_value, int64_t at, int64_t n) const {
    if (relu_output != nullptr) {
      const float g = stored(acc, addend != nullptr, addend != nullptr ? addend[at] : TOut{});
      return to_f32(relu_output[at]) > 0.f ? g : 0.f;
    }
    const float g = stored(acc, false, TOut{});
    return conv_input_value(x_value, relu_scale[n], relu_shift[n], true) > 0.f ? g : 0.f;
  }
  // What the staged tile keeps of an element for the sums: g' (gated, as stored), with x's
  // bits in the low half of the word where TOut is bf16.
  __device__ __forceinline__ static float staged_word(float g, TOut x_value) {
    if constexpr (kStagesX) {
      return __uint_as_float(__float_as_uint(g) | __bfloat16_as_ushort(x_value));
    } else {
      return g;
    }
  }
  // g' and x of the element at `at` from its staged word (x read again where it is not in it).
  __device__ __forceinline__ void from_staged_word(float word, int64_t at, float& g,
                                                   float& x_value) const {
    if constexpr (kStagesX) {
      const unsigned bits = __float_as_uint(word);
      g = __uint_as_float(bits & 0xffff0000u);
      x_value = __uint_as_float(bits << 16);
    } else {
      g = word;
      x_value = to_f32(x[at]);
    }
  }

  // acc by reference: the staged epilogue writes back what it leaves there (staged_word; acc
  // itself with reread).
  __device__ __forceinline__ void operator()(int split, int64_t m, int64_t n, float& acc) const {
    const int64_t at = m * matrix.ld + n;
    const TOut x_value = x[at];
    const float g = gated(acc, to_f32(x_value), at, n);
    matrix(split, m, n, g);
    if (!reread) acc = staged_word(g, x_value);
  }
  bool vector_fits() const {
    return matrix.vector_fits() && all_aligned<kVectorWidth>(x) && matrix.ld % 8 == 0 &&
           (relu_output == nullptr || all_aligned<kVectorWidth>(relu_output)) &&
           (addend == nullptr || all_aligned<kVectorWidth>(addend));
  }
  // acc by reference: the staged epilogue writes back what it leaves there (staged_word).
  __device__ __forceinline__ void store_vector(int split, int64_t m, int64_t n,
                                               float (&acc)[kVectorWidth]) const {
    const int64_t at = m * matrix.ld + n;
    float values[kVectorWidth];
    // x in a 16-byte load: to gate by, or (bf16) for the sums.
    Vector16<TOut> x_values{};
    if ((kStagesX && !reread) || relu_output == nullptr)
      x_values = *reinterpret_cast<const Vector16<TOut>*>(x + at);
    if (relu_output != nullptr) {
      // The mask and the addend in 16-byte loads too.
      const Vector16<TOut> a = *reinterpret_cast<const Vector16<TOut>*>(relu_output + at);
      Vector16<TOut> add{};
      if (addend != nullptr) add = *reinterpret_cast<const Vector16<TOut>*>(addend + at);
#pragma unroll
      for (int i = 0; i < kVectorWidth; ++i)
        values[i] = to_f32(a.v[i]) > 0.f ? stored(acc[i], addend != nullptr, add.v[i]) : 0.f;
    } else {
#pragma unroll
      for (int i = 0; i < kVectorWidth; ++i)
        values[i] = gated(acc[i], to_f32(x_values.v[i]), at + i, n + i);
    }
    matrix.store_vector(split, m, n, values);
    if (reread) return;
#pragma unroll
    for (int i = 0; i < kVectorWidth; ++i)
      acc[i] = staged_word(values[i], x_values.v[i]);
  }

  // After the staged tile's stores: staged[row][col] holds each element's staged_word; each
  // column's lanes sum g' and g' (x - mean) over interleaved rows (StagedColumnLanes, as
  // StoreWithColumnStats). Every thread of the block calls it (it has barriers).
  template <typename Block>
  __device__ void after_staged_tile(float (*staged)[Block::kStagedLd], int32_t m0, int32_t m_size,
                                    int32_t n0, int32_t n_size) const {
    const StagedColumnLanes<Block, 2> lanes(staged, m0, m_size, n0, n_size);
    constexpr int kLanes = StagedColumnLanes<Block, 2>::kLanes;
    __shared__ unsigned ticket;
    const int64_t n = lanes.n;

    float s_dy = 0.f, s_dy_xmu = 0.f;
    if (lanes.active) {
      const float mean = targets.grad.batch_stats[n];
      // The column's rows, element(r, at, g, v) giving each one's g' and x. One loop per way,
      // the choice outside them: within one loop the compiler predicates both ways' work.
      const auto sum_rows = [&](auto element) {
        for (int r = lanes.lane; r < lanes.rows; r += kLanes) {
          const int64_t at = (static_cast<int64_t>(m0) + r) * n_size + n;
          float g, v;
          element(r, at, g, v);
          s_dy += g;
          s_dy_xmu += g * (v - mean);
        }
      };
      if (reread) {
        sum_rows([&](int r, int64_t at, float& g, float& v) {
          v = to_f32(x[at]);
          g = gated(staged[r][lanes.col], v, at, n);
        });
      } else {
        sum_rows([&](int r, int64_t at, float& g, float& v) {
          from_staged_word(staged[r][lanes.col], at, g, v);
        });
      }
    }
    lanes.scratch(0, lanes.lane) = s_dy;
    lanes.scratch(1, lanes.lane) = s_dy_xmu;
    __syncthreads();
    const bool writer = lanes.lane == 0 && lanes.active;
    if (writer) {
      targets.part_dy[blockIdx.x * static_cast<int64_t>(n_size) + n] = lanes.lanes_sum(0);
      targets.part_dy_xmu[blockIdx.x * static_cast<int64_t>(n_size) + n] = lanes.lanes_sum(1);
    }
    targets.merge.template run<Block::kM>(
        m_size, ticket,
        [&](bool of_groups, int64_t first, int64_t last, auto /*rows_of*/) {
          return sum_partials(lanes, first, last, of_groups ? targets.group_dy : targets.part_dy,
                              of_groups ? targets.group_dy_xmu : targets.part_dy_xmu);
        },
        [&](int64_t g, const ColumnSums& merged) {
          if (writer) {
            targets.group_dy[g * n_size + n] = merged.dy;
            targets.group_dy_xmu[g * n_size + n] = merged.dy_xmu;
          }
        },
        [&](const ColumnSums& merged) {
          if (writer)
            batchnorm_backward_write_channel(targets.grad, n, n_size, merged.dy, merged.dy_xmu);
        });
  }

  struct ColumnSums {
    float dy, dy_xmu;
  };

  // The column's partials [first, last) summed in order: lane l sums the contiguous run l of
  // kLanes, lane 0 then adds the runs in lane order; the result is lane 0's. The partials are
  // other blocks' writes of this launch: read volatile. Every thread of the block calls it (it
  // has a barrier; the scratch's earlier readers are behind last_to_arrive's).
  template <typename Lanes>
  __device__ static ColumnSums sum_partials(const Lanes& lanes, int64_t first, int64_t last,
                                            const float* dys, const float* dy_xmus) {
    const volatile float* part_dy = dys;
    const volatile float* part_dy_xmu = dy_xmus;
    const int64_t n = lanes.n, n_size = lanes.n_size;
    float s_dy = 0.f, s_dy_xmu = 0.f;
    if (lanes.active) {
      int64_t begin, end;
      lanes.run(first, last, begin, end);
      for (int64_t p = begin; p < end; ++p) {
        s_dy += part_dy[p * n_size + n];
        s_dy_xmu += part_dy_xmu[p * n_size + n];
      }
    }
    lanes.scratch(0, lanes.lane) = s_dy;
    lanes.scratch(1, lanes.lane) = s_dy_xmu;
    __syncthreads();
    ColumnSums total{0.f, 0.f};
    if (lanes.lane == 0 && lanes.active) total = {lanes.lanes_sum(0), lanes.lanes_sum(1)};
    return total;
  }
};

}  // namespace engine::cuda
