// Operand views for the tiled GEMM kernels. A GEMM computes C[m][n] = sum_k A(m, k) B(n, k);
// an operand reads element (row, k) (row = m for A, n for B) in two steps, so that what
// depends on the row alone is worked out once per kernel and what depends on k once per K
// tile:
//   Row row(int32_t row) const;   K k(int32_t k) const;   T load(const Row&, const K&) const;
// load is called only for rows and k inside the matrix. kContiguousAlongK tells the tile
// loader which index to give consecutive threads so that global loads coalesce. Where the
// host-side vectorizable(width) holds, const T* vector_source(row, k) is where the 16 bytes of
// `width` elements from (row, k) on along the contiguous index are, or nullptr where they are
// all zeros (a convolution's padding); gemm_launch also checks that the matrix's extent along
// it is a multiple of width. origin() is some valid address of the operand's data (the one
// the bf16 engine's zero-filling cp.async names, unread). Only the bf16 engine uses these.
// Indices are 32-bit (gemm_launch checks the sizes); offsets into the data are 64-bit. Dense
// matrices are here; the convolution gathers are in conv_operands.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace engine::cuda {

// 16-byte loads of `width` elements of T from data need T * width == 16 bytes, data 16-byte
// aligned and every vector's first element a multiple of width from it (stride % width).
template <typename T>
bool vector_loads_fit(const T* data, int width, int64_t stride) {
  return static_cast<int64_t>(sizeof(T)) * width == 16 &&
         reinterpret_cast<uintptr_t>(data) % 16 == 0 && stride % width == 0;
}

// Element (row, k) at data[row * ld + k]: a row-major A, or a B stored as N x K (filters).
template <typename T>
struct KContiguousOperand {
  static constexpr bool kContiguousAlongK = true;
  using Row = int64_t;  // row * ld
  using K = int32_t;
  const T* data;
  int64_t ld;
  __device__ __forceinline__ Row row(int32_t r) const { return r * ld; }
  __device__ __forceinline__ K k(int32_t k_index) const { return k_index; }
  __device__ __forceinline__ T load(Row r, K k_index) const { return data[r + k_index]; }
  __device__ __forceinline__ const T* vector_source(Row r, K k_index) const {
    return data + r + k_index;
  }
  __device__ __forceinline__ const T* origin() const { return data; }
  bool vectorizable(int width) const { return vector_loads_fit(data, width, ld); }
};

// Element (row, k) at data[k * ld + row]: a transposed A, or a B stored as K x N.
template <typename T>
struct RowContiguousOperand {
  static constexpr bool kContiguousAlongK = false;
  using Row = int32_t;
  using K = int64_t;  // k * ld
  const T* data;
  int64_t ld;
  __device__ __forceinline__ Row row(int32_t r) const { return r; }
  __device__ __forceinline__ K k(int32_t k_index) const { return k_index * ld; }
  __device__ __forceinline__ T load(Row r, K k_index) const { return data[k_index + r]; }
  __device__ __forceinline__ const T* vector_source(Row r, K k_index) const {
    return data + k_index + r;
  }
  __device__ __forceinline__ const T* origin() const { return data; }
  bool vectorizable(int width) const { return vector_loads_fit(data, width, ld); }
};

}  // namespace engine::cuda
