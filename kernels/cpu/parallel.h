// OpenMP helpers for the CPU ops. Small loops stay on one thread: waking the thread pool
// costs more than it saves below a few tens of thousands of elements.
#pragma once

#include <cstdint>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace engine::cpu {

constexpr int64_t kParallelThreshold = int64_t{1} << 15;

// The threads a parallel region here would get (1 without OpenMP).
inline int64_t max_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Calls body(i) for i in [0, n), in parallel when n is large enough.
template <typename Body>
void parallel_for(int64_t n, Body&& body) {
#pragma omp parallel for schedule(static) if (n >= kParallelThreshold)
  for (int64_t i = 0; i < n; ++i)
    body(i);
}

}  // namespace engine::cpu
