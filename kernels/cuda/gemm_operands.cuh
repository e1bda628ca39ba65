// Operand views for the tiled GEMM kernels. A GEMM computes C[m][n] = sum_k A(m, k) B(n, k);
// an operand is any functor `T operator()(int64_t row, int64_t k)` (row = m for A, n for B)
// plus kContiguousAlongK, which tells the tile loader which index to give consecutive threads
// so that global loads coalesce. Dense matrices are here; the convolution gathers are in
// conv_operands.cuh.
#pragma once

#include <cstdint>

namespace engine::cuda {

// Element (row, k) at data[row * ld + k]: a row-major A, or a B stored as N x K (filters).
template <typename T>
struct KContiguousOperand {
  static constexpr bool kContiguousAlongK = true;
  const T* data;
  int64_t ld;
  __device__ __forceinline__ T operator()(int64_t row, int64_t k) const {
    return data[row * ld + k];
  }
};

// Element (row, k) at data[k * ld + row]: a transposed A, or a B stored as K x N.
template <typename T>
struct RowContiguousOperand {
  static constexpr bool kContiguousAlongK = false;
  const T* data;
  int64_t ld;
  __device__ __forceinline__ T operator()(int64_t row, int64_t k) const {
    return data[k * ld + row];
  }
};

}  // namespace engine::cuda
