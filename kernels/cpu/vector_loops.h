// One loop source compiled for each vector width. The library is built for baseline x86-64 so
// that one binary runs anywhere (4-float SSE vectors); run_loops_at() inlines a body (flatten)
// into a function built for AVX2+FMA or AVX-512F, where the compiler vectorizes the same loops
// 8 or 16 floats wide. Each element is the same expression, so the results are the same bits
// (the build's -std=c++20 keeps the compiler from contracting a multiply and an add into an FMA).
// Include only from .cpp files: each instantiation's body is a lambda of that file, so no
// wider copy of a shared definition can be picked by the linker for baseline code.
#pragma once

#include "kernels/cpu/isa.h"

namespace engine::cpu {

namespace vector_loops_detail {

// Baseline x86-64 too goes through a flattened function, so that every width inlines the body
// alike (the loops then see their pointers as locals).
template <typename Body>
__attribute__((flatten)) void run_baseline(Body& body) {
  body();
}

template <typename Body>
__attribute__((target("avx2,fma"), flatten)) void run_avx2(Body& body) {
  body();
}

template <typename Body>
__attribute__((target("avx512f"), flatten)) void run_avx512(Body& body) {
  body();
}

}  // namespace vector_loops_detail

// Calls body() compiled for `level` (at most what vector_isa() allows: the caller's choice).
template <typename Body>
void run_loops_at(VectorIsa level, Body&& body) {
  switch (level) {
    case VectorIsa::kAvx512:
      vector_loops_detail::run_avx512(body);
      return;
    case VectorIsa::kAvx2:
      vector_loops_detail::run_avx2(body);
      return;
    case VectorIsa::kBaseline:
      break;
  }
  vector_loops_detail::run_baseline(body);
}

}  // namespace engine::cpu
