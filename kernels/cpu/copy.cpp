#include "kernels/cpu/copy.h"

#include "kernels/cpu/parallel.h"

namespace engine::cpu {

void fill(DType dtype, void* dst, int64_t n, float value) {
  if (dtype == DType::f64) {
    double* out = static_cast<double*>(dst);
    parallel_for(n, [&](int64_t i) { out[i] = value; });
    return;
  }
  dispatch_dtype(dtype, [&]<typename T>() {
    T* out = static_cast<T*>(dst);
    const T rounded = from_float<T>(value);
    parallel_for(n, [&](int64_t i) { out[i] = rounded; });
  });
}

void cast(DType src_dtype, const void* src, DType dst_dtype, void* dst, int64_t n) {
  dispatch_dtype(src_dtype, [&]<typename TIn>() {
    dispatch_dtype(dst_dtype, [&]<typename TOut>() {
      const TIn* in = static_cast<const TIn*>(src);
      TOut* out = static_cast<TOut*>(dst);
      parallel_for(n, [&](int64_t i) { out[i] = from_float<TOut>(to_float(in[i])); });
    });
  });
}

}  // namespace engine::cpu
