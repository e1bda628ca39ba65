#include "kernels/cpu/activation.h"

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vector_loops.h"

namespace engine::cpu {

namespace {

// Calls loop(begin, end) over [0, n) in parallel, its loops compiled for the widest vector
// width vector_isa() allows (kernels/cpu/vector_loops.h). Without the wider copies ReLU ran at
// 0.43-0.75x of PyTorch's on the AVX2-only AMD EPYC
// (bench/results/kernels-cpu-resnet18-amd-epyc-avx2.txt).
template <typename Loop>
void for_each_range_widest(int64_t n, Loop&& loop) {
  const VectorIsa isa = vector_isa();
  parallel_for_ranges(
      n, [&](int64_t begin, int64_t end) { run_loops_at(isa, [&] { loop(begin, end); }); });
}

// y = a + b, then max(., 0) when Relu: fp32 math, one rounding.
template <bool Relu>
void add_maybe_relu(const AddArgs& args) {
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* lhs = static_cast<const T*>(args.a);
    const T* rhs = static_cast<const T*>(args.b);
    T* out = static_cast<T*>(args.y);
    for_each_range_widest(args.n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float v = to_float(lhs[i]) + to_float(rhs[i]);
        out[i] = from_float<T>(Relu && v < 0.f ? 0.f : v);
      }
    });
  });
}

}  // namespace

void relu_forward(const ReluForwardArgs& args) {
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* in = static_cast<const T*>(args.x);
    T* out = static_cast<T*>(args.y);
    for_each_range_widest(args.n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float v = to_float(in[i]);
        out[i] = from_float<T>(v < 0.f ? 0.f : v);
      }
    });
  });
}

void relu_backward(const ReluBackwardArgs& args) {
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* out = static_cast<const T*>(args.y);
    const T* grad_out = static_cast<const T*>(args.dy);
    T* grad_in = static_cast<T*>(args.dx);
    // A select of floats, not of T: the compiler vectorizes it as a mask, where a T-typed
    // select stays a scalar branch.
    for_each_range_widest(args.n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float g = to_float(grad_out[i]);
        grad_in[i] = from_float<T>(to_float(out[i]) > 0.f ? g : 0.f);
      }
    });
  });
}

void add(const AddArgs& args) {
  if (args.relu) {
    add_maybe_relu<true>(args);
  } else {
    add_maybe_relu<false>(args);
  }
}

}  // namespace engine::cpu
