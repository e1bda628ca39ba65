// nvcuda::wmma (tensor-core fragments) emulated per lane. Under g++ CUDA's <mma.h> is empty;
// kernels include it and get these definitions instead.
//
// Layout: lane l holds the fragment's elements l, l + 32, l + 64, ... of the matrix in
// row-major order (CUDA leaves the per-lane layout unspecified, so kernels may only use x[]
// element-wise, which works with any layout). Loads and stores touch only the calling lane's
// elements and do not synchronize (a kernel needs a barrier before reading what another lane
// stored, as on the GPU). mma_sync is warp-collective: lanes publish pointers to their
// fragments, meet at a warp barrier, each computes its own outputs from everyone's operands,
// then meet again before any operand can change. Products and sums are fp32.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "sim/simt/runtime.h"
#include "sim/simt/sync.h"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {

// Rows and columns of the matrix a fragment holds: A is MxK, B is KxN, C/D are MxN.
template <typename Use, int M, int N, int K>
struct shape;
template <int M, int N, int K>
struct shape<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct shape<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct shape<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

inline float to_float(float v) {
  return v;
}
inline float to_float(__half v) {
  return __half2float(v);
}
inline float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return static_cast<T>(v);
  }
}

// satf: infinities become the largest finite value, NaN becomes +0.
inline float saturate_finite(float v) {
  if (std::isnan(v)) return 0.0f;
  return std::clamp(v, std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max());
}

// Element `i` of this lane's x[] is matrix element (lane + 32 i) in row-major order.
inline int element_index(int i) {
  return static_cast<int>(simt::detail::lane_id()) + 32 * i;
}

}  // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  using element_type = T;
  using storage_element_type = T;
  static constexpr int rows = detail::shape<Use, M, N, K>::rows;
  static constexpr int cols = detail::shape<Use, M, N, K>::cols;
  static_assert(rows * cols % 32 == 0, "a fragment spreads its matrix evenly over 32 lanes");
  static constexpr int num_elements = rows * cols / 32;
  T x[num_elements];
};

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const std::type_identity_t<T>& value) {
  for (int i = 0; i < f.num_elements; ++i)
    f.x[i] = value;
}

// A and B: the fragment's Layout says how the matrix is stored.
template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  static_assert(std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>,
                "matrix_a/matrix_b fragments need a row_major or col_major layout");
  using F = fragment<Use, M, N, K, T, Layout>;
  for (int i = 0; i < F::num_elements; ++i) {
    const int e = detail::element_index(i), r = e / F::cols, c = e % F::cols;
    f.x[i] = std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[r + c * ldm];
  }
}

// Accumulators: the layout is an argument.
template <int M, int N, int K, typename T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* p, unsigned ldm,
                      layout_t layout) {
  for (int i = 0; i < f.num_elements; ++i) {
    const int e = detail::element_index(i), r = e / N, c = e % N;
    f.x[i] = layout == mem_row_major ? p[r * ldm + c] : p[r + c * ldm];
  }
}

template <int M, int N, int K, typename T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm,
                       layout_t layout) {
  for (int i = 0; i < f.num_elements; ++i) {
    const int e = detail::element_index(i), r = e / N, c = e % N;
    (layout == mem_row_major ? p[r * ldm + c] : p[r + c * ldm]) = f.x[i];
  }
}

// D = A B + C over the whole warp.
template <int M, int N, int K, typename TD, typename TAB, typename LA, typename LB, typename TC>
void mma_sync(fragment<accumulator, M, N, K, TD>& d, const fragment<matrix_a, M, N, K, TAB, LA>& a,
              const fragment<matrix_b, M, N, K, TAB, LB>& b,
              const fragment<accumulator, M, N, K, TC>& c, bool satf = false) {
  using A = fragment<matrix_a, M, N, K, TAB, LA>;
  using B = fragment<matrix_b, M, N, K, TAB, LB>;
  struct Operands {
    const A* a;
    const B* b;
  };
  simt::detail::require_full_warp("wmma::mma_sync");
  const Operands mine{&a, &b};
  void** published = simt::detail::warp_scratch();
  published[simt::detail::lane_id()] = const_cast<Operands*>(&mine);
  __syncwarp();
  float out[fragment<accumulator, M, N, K, TD>::num_elements];
  for (int i = 0; i < d.num_elements; ++i) {
    const int e = detail::element_index(i), row = e / N, col = e % N;
    float sum = detail::to_float(c.x[i]);
    for (int k = 0; k < K; ++k) {
      const int ea = row * K + k, eb = k * N + col;
      const auto& pa = *static_cast<const Operands*>(published[ea % 32])->a;
      const auto& pb = *static_cast<const Operands*>(published[eb % 32])->b;
      sum += detail::to_float(pa.x[ea / 32]) * detail::to_float(pb.x[eb / 32]);
    }
    out[i] = sum;
  }
  __syncwarp();  // every lane has read the operands: they may change now
  for (int i = 0; i < d.num_elements; ++i) {
    d.x[i] = detail::from_float<TD>(satf ? detail::saturate_finite(out[i]) : out[i]);
  }
}

}  // namespace nvcuda::wmma
