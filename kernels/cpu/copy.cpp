#include "kernels/cpu/copy.h"

#include "kernels/cpu/bf16_round.h"
#include "kernels/cpu/parallel.h"

namespace engine::cpu {

void fill(const FillArgs& args) {
  if (args.dtype == DType::f64) {
    double* out = static_cast<double*>(args.dst);
    parallel_for(args.n, [&](int64_t i) { out[i] = args.value; });
    return;
  }
  dispatch_dtype(args.dtype, [&]<typename T>() {
    T* out = static_cast<T*>(args.dst);
    const T rounded = from_float<T>(args.value);
    parallel_for(args.n, [&](int64_t i) { out[i] = rounded; });
  });
}

void cast(const CastArgs& args) {
  const int64_t n = args.n;
  if (args.src_dtype == DType::f32 && args.dst_dtype == DType::bf16) {
    // The bf16 compute weights of every layer, cast from the fp32 master each step: a
    // visible share of a bf16 step in the scalar loop (docs/kernel-tuning.md).
    const float* in = static_cast<const float*>(args.src);
    uint16_t* out = static_cast<uint16_t*>(args.dst);
    parallel_for_ranges(n, [&](int64_t begin, int64_t end) {
      round_to_bf16_bits(in + begin, out + begin, end - begin);
    });
    return;
  }
  dispatch_dtype(args.src_dtype, [&]<typename TIn>() {
    dispatch_dtype(args.dst_dtype, [&]<typename TOut>() {
      const TIn* in = static_cast<const TIn*>(args.src);
      TOut* out = static_cast<TOut*>(args.dst);
      parallel_for(n, [&](int64_t i) { out[i] = from_float<TOut>(to_float(in[i])); });
    });
  });
}

}  // namespace engine::cpu
