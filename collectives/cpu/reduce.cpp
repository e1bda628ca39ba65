#include "collectives/cpu/reduce.h"

#include <cstring>

#include "kernels/error.h"

namespace engine::cpu {
namespace {

// The same expressions as the CUDA kernels, so both round and treat NaN alike.
struct SumOp {
  static float apply(float a, float b) { return a + b; }
};
struct MaxOp {
  static float apply(float a, float b) { return (a > b || a != a) ? a : b; }
};
struct MinOp {
  static float apply(float a, float b) { return (a < b || a != a) ? a : b; }
};

// Separate loops for "divide" and "no divide" keep the common case a plain vectorizable
// add; the element type is known at compile time so bf16 conversion vectorizes too.
template <typename T, typename Op, bool kDivide>
void reduce_loop(T* dst, const T* a, const T* b, int64_t n, float divisor) {
  for (int64_t i = 0; i < n; ++i) {
    float value = Op::apply(to_float(a[i]), to_float(b[i]));
    if constexpr (kDivide) value = value / divisor;
    dst[i] = from_float<T>(value);
  }
}

template <typename T, typename Op>
void reduce_typed(void* dst, const void* a, const void* b, int64_t n, int divisor) {
  auto* out = static_cast<T*>(dst);
  const auto* in_a = static_cast<const T*>(a);
  const auto* in_b = static_cast<const T*>(b);
  if (divisor == 1) {
    reduce_loop<T, Op, false>(out, in_a, in_b, n, 1.f);
  } else {
    reduce_loop<T, Op, true>(out, in_a, in_b, n, static_cast<float>(divisor));
  }
}

}  // namespace

void reduce(const Reduction& reduction, void* dst, const void* a, const void* b, int64_t n) {
  if (n <= 0) return;
  ENGINE_REQUIRE(reduction.divisor >= 1, "reduce: divisor must be at least 1");
  dispatch_dtype(reduction.dtype, [&]<typename T>() {
    switch (reduction.op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        reduce_typed<T, SumOp>(dst, a, b, n, reduction.divisor);
        break;
      case ReduceOp::max:
        reduce_typed<T, MaxOp>(dst, a, b, n, reduction.divisor);
        break;
      case ReduceOp::min:
        reduce_typed<T, MinOp>(dst, a, b, n, reduction.divisor);
        break;
    }
  });
}

void divide(DType dtype, void* data, int64_t n, int divisor) {
  if (n <= 0 || divisor == 1) return;
  dispatch_dtype(dtype, [&]<typename T>() {
    T* values = static_cast<T*>(data);
    const float d = static_cast<float>(divisor);
    for (int64_t i = 0; i < n; ++i)
      values[i] = from_float<T>(to_float(values[i]) / d);
  });
}

}  // namespace engine::cpu
