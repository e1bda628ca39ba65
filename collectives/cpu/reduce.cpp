#include "collectives/cpu/reduce.h"

#include <cstring>

#include "kernels/error.h"

namespace engine::cpu {
namespace {

// The same expressions as the CUDA kernels, so both round and treat NaN alike. V is the
// type the step computes in: float for f32 and bf16, double for f64.
struct SumOp {
  template <typename V>
  static V apply(V a, V b) {
    return a + b;
  }
};
struct MaxOp {
  template <typename V>
  static V apply(V a, V b) {
    return (a > b || a != a) ? a : b;
  }
};
struct MinOp {
  template <typename V>
  static V apply(V a, V b) {
    return (a < b || a != a) ? a : b;
  }
};

// How an element type is loaded into and stored from the type the step computes in.
template <typename T>
struct Element {
  using Math = float;
  static float load(T value) { return to_float(value); }
  static T store(float value) { return from_float<T>(value); }
};
template <>
struct Element<double> {
  using Math = double;
  static double load(double value) { return value; }
  static double store(double value) { return value; }
};

// Separate loops for "divide" and "no divide" keep the common case a plain vectorizable
// add; the element type is known at compile time so bf16 conversion vectorizes too.
template <typename T, typename Op, bool kDivide>
void reduce_loop(T* dst, const T* a, const T* b, int64_t n, typename Element<T>::Math divisor) {
  for (int64_t i = 0; i < n; ++i) {
    auto value = Op::apply(Element<T>::load(a[i]), Element<T>::load(b[i]));
    if constexpr (kDivide) value = value / divisor;
    dst[i] = Element<T>::store(value);
  }
}

template <typename T, typename Op>
void reduce_typed(void* dst, const void* a, const void* b, int64_t n, int divisor) {
  using Math = typename Element<T>::Math;
  auto* out = static_cast<T*>(dst);
  const auto* in_a = static_cast<const T*>(a);
  const auto* in_b = static_cast<const T*>(b);
  if (divisor == 1) {
    reduce_loop<T, Op, false>(out, in_a, in_b, n, Math{1});
  } else {
    reduce_loop<T, Op, true>(out, in_a, in_b, n, static_cast<Math>(divisor));
  }
}

// Calls fn.template operator()<T>() for f32, bf16 (engine::bf16) and f64 (double).
template <typename Fn>
void dispatch_reduce_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::f64) {
    fn.template operator()<double>();
  } else {
    dispatch_dtype(dtype, fn);
  }
}

}  // namespace

void reduce(const Reduction& reduction, void* dst, const void* a, const void* b, int64_t n) {
  if (n <= 0) return;
  ENGINE_REQUIRE(reduction.divisor >= 1, "reduce: divisor must be at least 1");
  dispatch_reduce_dtype(reduction.dtype, [&]<typename T>() {
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
  dispatch_reduce_dtype(dtype, [&]<typename T>() {
    T* values = static_cast<T*>(data);
    const auto d = static_cast<typename Element<T>::Math>(divisor);
    for (int64_t i = 0; i < n; ++i)
      values[i] = Element<T>::store(Element<T>::load(values[i]) / d);
  });
}

}  // namespace engine::cpu
