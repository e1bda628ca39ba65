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

// Calls body(i) for i in [0, n), in parallel unless n is 1 or this is already inside a parallel
// region (then all on the calling thread): for work such as packing a GEMM operand's panels,
// which a caller may do on each of its own threads.
template <typename Body>
void parallel_for_unless_nested(int64_t n, Body&& body) {
  [[maybe_unused]] bool nested = false;
#if defined(_OPENMP)
  nested = omp_in_parallel();
#endif
#pragma omp parallel for schedule(static) if (n > 1 && !nested)
  for (int64_t i = 0; i < n; ++i)
    body(i);
}

// Calls body(begin, end) once per thread of a parallel region on contiguous, nearly equal
// shares of [0, n), thread t taking [n t / T, n (t + 1) / T); one call on the whole range when
// `parallel` is false. Two calls with the same n and team give each thread the same share,
// which lets a second pass over data start where the thread's first pass left its cache.
template <typename Body>
void for_each_thread_share(int64_t n, bool parallel, Body&& body) {
  if (!parallel) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
#if defined(_OPENMP)
    const int64_t threads = omp_get_num_threads();
    const int64_t thread = omp_get_thread_num();
#else
    const int64_t threads = 1;
    const int64_t thread = 0;
#endif
    body(n * thread / threads, n * (thread + 1) / threads);
  }
}

// Calls body(begin, end) once per thread on contiguous, equal shares of [0, n) (one call on
// the whole range when n is small). For loops that must see their operands as locals to be
// vectorized: body(i) reads the caller's variables through its closure.
template <typename Body>
void parallel_for_ranges(int64_t n, Body&& body) {
  for_each_thread_share(n, n >= kParallelThreshold, body);
}

}  // namespace engine::cpu
