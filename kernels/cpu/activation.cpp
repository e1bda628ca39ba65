#include "kernels/cpu/activation.h"

#include "kernels/cpu/isa.h"
#include "kernels/cpu/parallel.h"

namespace engine::cpu {

namespace {

// The element-wise loops over [begin, end), written once as plain C++ and compiled three
// times: for baseline x86-64 (4 floats per SSE vector), and inlined into the AVX2 and AVX-512
// functions below, where the compiler vectorizes the same source 8 and 16 floats wide. The
// same source gives the same bits: each element is one fp32 expression and one rounding.
// The library is built for baseline x86-64; without the wider copies ReLU ran at 0.43-0.75x
// of PyTorch's on the AVX2-only AMD EPYC (bench/results/kernels-cpu-resnet18-amd-epyc-avx2.txt).
struct ReluForward {
  template <typename T>
  __attribute__((always_inline)) static void run(const T* in, const T*, T* out, int64_t begin,
                                                 int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float v = to_float(in[i]);
      out[i] = from_float<T>(v < 0.f ? 0.f : v);
    }
  }
};

struct ReluBackward {
  // in: y, other: dy. A select of floats, not of T: the compiler vectorizes it as a mask,
  // where a T-typed select stays a scalar branch.
  template <typename T>
  __attribute__((always_inline)) static void run(const T* in, const T* other, T* out, int64_t begin,
                                                 int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float g = to_float(other[i]);
      out[i] = from_float<T>(to_float(in[i]) > 0.f ? g : 0.f);
    }
  }
};

// y = a + b, then max(., 0) when Relu: fp32 math, one rounding.
template <bool Relu>
struct AddMaybeRelu {
  template <typename T>
  __attribute__((always_inline)) static void run(const T* in, const T* other, T* out, int64_t begin,
                                                 int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float v = to_float(in[i]) + to_float(other[i]);
      out[i] = from_float<T>(Relu && v < 0.f ? 0.f : v);
    }
  }
};

template <typename Op, typename T>
__attribute__((target("avx2,fma"))) void run_avx2(const T* in, const T* other, T* out,
                                                  int64_t begin, int64_t end) {
  Op::run(in, other, out, begin, end);
}

template <typename Op, typename T>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void run_avx512(const T* in, const T* other,
                                                                     T* out, int64_t begin,
                                                                     int64_t end) {
  Op::run(in, other, out, begin, end);
}

// Runs Op over n elements of dtype, on the widest loops vector_isa() allows, in parallel.
template <typename Op>
void elementwise(DType dtype, const void* in, const void* other, void* out, int64_t n) {
  dispatch_dtype(dtype, [&]<typename T>() {
    const T* a = static_cast<const T*>(in);
    const T* b = static_cast<const T*>(other);
    T* y = static_cast<T*>(out);
    const VectorIsa isa = vector_isa();
    parallel_for_ranges(n, [&](int64_t begin, int64_t end) {
      if (isa == VectorIsa::kAvx512) {
        run_avx512<Op>(a, b, y, begin, end);
      } else if (isa == VectorIsa::kAvx2) {
        run_avx2<Op>(a, b, y, begin, end);
      } else {
        Op::run(a, b, y, begin, end);
      }
    });
  });
}

}  // namespace

void relu_forward(DType dtype, const void* x, void* y, int64_t n) {
  elementwise<ReluForward>(dtype, x, nullptr, y, n);
}

void relu_backward(DType dtype, const void* y, const void* dy, void* dx, int64_t n) {
  elementwise<ReluBackward>(dtype, y, dy, dx, n);
}

void add_relu_forward(DType dtype, const void* a, const void* b, void* y, int64_t n) {
  elementwise<AddMaybeRelu<true>>(dtype, a, b, y, n);
}

void add(DType dtype, const void* a, const void* b, void* y, int64_t n) {
  elementwise<AddMaybeRelu<false>>(dtype, a, b, y, n);
}

}  // namespace engine::cpu
