// BatchNorm + ReLU's backward reduction done in the input-gradient convolution's staged
// epilogue (cuDNN's dgrad + drelu + dbn). The convolution computes g = dL/da for a = relu(x *
// scale + shift), the BatchNorm + ReLU its input's loads applied (conv_input_value); BatchNorm's
// backward then needs g' = g where a > 0 (else 0) and per channel sum(g'), sum(g' (x - mean)).
// While the block's tile of g (rows = input pixels, columns = channels) sits in shared memory,
// this store writes g' instead of g (the mask recomputed from x, read from global memory at the
// same place) and sums both per column, so batchnorm_backward_reduce never reads g and x back:
// BatchNorm's backward is its element-wise pass alone, reading g' as its dy without a mask.
//
// g is rounded to the output's dtype before it is gated and summed: the values as stored, so
// that the bits are those the unfused path gives (which reads the stored g). Each block sums
// its tile's valid rows per column in a fixed order, the row tiles' partials are merged in two
// levels in a fixed order (RowTileMerge, as the forward's statistics), plain fp32 sums, and the
// last block writes grad_sums and the parameter gradients through
// batchnorm_backward_write_channel, as batchnorm_backward_reduce's merge does.
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
// mask from relu_scale/relu_shift. Only the staged epilogue of the tensor-core engine without
// split K runs it (conv_backward_bn.cuh's path query).
template <typename TOut>
struct StoreGatedWithBatchNormGrad {
  static constexpr int kVectorWidth = StoreToMatrix<TOut>::kVectorWidth;
  static constexpr bool kReadsStagedTile = true;
  StoreToMatrix<TOut> matrix;  // no bias, not accumulating: the sums are of what it writes
  const TOut* x = nullptr;
  const float* relu_scale = nullptr;
  const float* relu_shift = nullptr;
  BatchNormGradSumsTargets targets;

  // g as stored (rounded to TOut), or 0 where the ReLU's output was not positive (NaN
  // included): batchnorm_reduce.cuh's gate_by_recomputed_relu on x's stored value.
  __device__ __forceinline__ float gated(float acc, float x_value, int64_t n) const {
    const float g = to_f32(from_f32<TOut>(acc));
    return conv_input_value(x_value, relu_scale[n], relu_shift[n], true) > 0.f ? g : 0.f;
  }
  __device__ __forceinline__ void operator()(int split, int64_t m, int64_t n, float acc) const {
    matrix(split, m, n, gated(acc, to_f32(x[m * matrix.ld + n]), n));
  }
  bool vector_fits() const {
    return matrix.vector_fits() && all_aligned<kVectorWidth>(x) && matrix.ld % 8 == 0;
  }
  __device__ __forceinline__ void store_vector(int split, int64_t m, int64_t n,
                                               const float (&acc)[kVectorWidth]) const {
    const Vector16<TOut> x_values = *reinterpret_cast<const Vector16<TOut>*>(x + m * matrix.ld + n);
    float values[kVectorWidth];
#pragma unroll
    for (int i = 0; i < kVectorWidth; ++i)
      values[i] = gated(acc[i], to_f32(x_values.v[i]), n + i);
    matrix.store_vector(split, m, n, values);
  }

  // After the staged tile's stores: staged[row][col] holds the block's fp32 g; each column's
  // lanes sum g' and g' (x - mean) over interleaved rows (StagedColumnLanes, as
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
      for (int r = lanes.lane; r < lanes.rows; r += kLanes) {
        const float v = to_f32(x[(static_cast<int64_t>(m0) + r) * n_size + n]);
        const float g = gated(staged[r][lanes.col], v, n);
        s_dy += g;
        s_dy_xmu += g * (v - mean);
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
