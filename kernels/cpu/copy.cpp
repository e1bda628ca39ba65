#include "kernels/cpu/copy.h"

#include "kernels/cpu/bf16_round.h"
#include "kernels/cpu/isa.h"
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
  if (src_dtype == DType::f32 && dst_dtype == DType::bf16 && use_avx512()) {
    // The bf16 compute weights of every layer, cast from the fp32 master each step: the
    // scalar loop took 8% of a resnet18 bf16 step.
    const float* in = static_cast<const float*>(src);
    uint16_t* out = static_cast<uint16_t*>(dst);
    parallel_for_ranges(n, [&](int64_t begin, int64_t end) {
      round_to_bf16_avx512(in + begin, out + begin, end - begin);
    });
    return;
  }
  dispatch_dtype(src_dtype, [&]<typename TIn>() {
    dispatch_dtype(dst_dtype, [&]<typename TOut>() {
      const TIn* in = static_cast<const TIn*>(src);
      TOut* out = static_cast<TOut*>(dst);
      parallel_for(n, [&](int64_t i) { out[i] = from_float<TOut>(to_float(in[i])); });
    });
  });
}

}  // namespace engine::cpu
