// Device math and bit intrinsics that have no host definition, defined with host arithmetic.
// Fast-math intrinsics (__expf, __fdividef, ...) compute the exact host function: kernels must
// not depend on the GPU's reduced precision, and tests compare against tolerances anyway.
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>

inline float __expf(float x) {
  return std::exp(x);
}
inline float __exp10f(float x) {
  return std::pow(10.0f, x);
}
inline float __logf(float x) {
  return std::log(x);
}
inline float __log2f(float x) {
  return std::log2(x);
}
inline float __log10f(float x) {
  return std::log10(x);
}
inline float __powf(float x, float y) {
  return std::pow(x, y);
}
inline float __sinf(float x) {
  return std::sin(x);
}
inline float __cosf(float x) {
  return std::cos(x);
}
inline float __tanf(float x) {
  return std::tan(x);
}
inline void __sincosf(float x, float* s, float* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
inline float __fdividef(float x, float y) {
  return x / y;
}
inline float fdividef(float x, float y) {
  return x / y;
}
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
inline float __frsqrt_rn(float x) {
  return 1.0f / std::sqrt(x);
}
inline float __frcp_rn(float x) {
  return 1.0f / x;
}
inline float __fsqrt_rn(float x) {
  return std::sqrt(x);
}
inline float __fadd_rn(float x, float y) {
  return x + y;
}
inline float __fsub_rn(float x, float y) {
  return x - y;
}
inline float __fmul_rn(float x, float y) {
  return x * y;
}
inline float __fdiv_rn(float x, float y) {
  return x / y;
}
inline float __fmaf_rn(float x, float y, float z) {
  return std::fma(x, y, z);
}
inline double __fma_rn(double x, double y, double z) {
  return std::fma(x, y, z);
}
// Clamps to [0, 1]; NaN becomes 0 as on the GPU.
inline float __saturatef(float x) {
  return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f;
}

// Conversions (nearbyint rounds to nearest even in the default rounding mode).
inline int __float2int_rn(float x) {
  return static_cast<int>(std::nearbyint(x));
}
inline int __float2int_rz(float x) {
  return static_cast<int>(x);
}
inline int __float2int_rd(float x) {
  return static_cast<int>(std::floor(x));
}
inline int __float2int_ru(float x) {
  return static_cast<int>(std::ceil(x));
}
inline unsigned __float2uint_rn(float x) {
  return static_cast<unsigned>(std::nearbyint(x));
}
inline float __int2float_rn(int x) {
  return static_cast<float>(x);
}
inline float __uint2float_rn(unsigned x) {
  return static_cast<float>(x);
}
inline int __float_as_int(float x) {
  return std::bit_cast<int>(x);
}
inline unsigned __float_as_uint(float x) {
  return std::bit_cast<unsigned>(x);
}
inline float __int_as_float(int x) {
  return std::bit_cast<float>(x);
}
inline float __uint_as_float(unsigned x) {
  return std::bit_cast<float>(x);
}
inline long long __double_as_longlong(double x) {
  return std::bit_cast<long long>(x);
}
inline double __longlong_as_double(long long x) {
  return std::bit_cast<double>(x);
}

// Bit manipulation.
inline int __popc(unsigned x) {
  return std::popcount(x);
}
inline int __popcll(unsigned long long x) {
  return std::popcount(x);
}
inline int __clz(int x) {
  return std::countl_zero(static_cast<unsigned>(x));
}
inline int __clzll(long long x) {
  return std::countl_zero(static_cast<unsigned long long>(x));
}
inline int __ffs(int x) {
  return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1;
}
inline int __ffsll(long long x) {
  return x == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(x)) + 1;
}
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i)
    r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned __umulhi(unsigned x, unsigned y) {
  return static_cast<unsigned>((static_cast<unsigned long long>(x) * y) >> 32);
}
inline int __mulhi(int x, int y) {
  return static_cast<int>((static_cast<long long>(x) * y) >> 32);
}
inline int __mul24(int x, int y) {
  return x * y;
}
inline unsigned __umul24(unsigned x, unsigned y) {
  return x * y;
}

// Cache-hinted loads and stores are plain memory accesses.
template <typename T>
T __ldg(const T* p) {
  return *p;
}
template <typename T>
T __ldcg(const T* p) {
  return *p;
}
template <typename T>
T __ldca(const T* p) {
  return *p;
}
template <typename T>
T __ldcs(const T* p) {
  return *p;
}
template <typename T>
T __ldlu(const T* p) {
  return *p;
}
template <typename T>
T __ldcv(const T* p) {
  return *p;
}
template <typename T>
void __stcg(T* p, T v) {
  *p = v;
}
template <typename T>
void __stcs(T* p, T v) {
  *p = v;
}
template <typename T>
void __stwb(T* p, T v) {
  *p = v;
}
template <typename T>
void __stwt(T* p, T v) {
  *p = v;
}

// CUDA's global min/max overloads, including the mixed signed/unsigned ones.
#define SIMT_MIN_MAX(R, A, B)                             \
  inline R min(A a, B b) {                                \
    const R x = static_cast<R>(a), y = static_cast<R>(b); \
    return x < y ? x : y;                                 \
  }                                                       \
  inline R max(A a, B b) {                                \
    const R x = static_cast<R>(a), y = static_cast<R>(b); \
    return x > y ? x : y;                                 \
  }
SIMT_MIN_MAX(int, int, int)
SIMT_MIN_MAX(unsigned, unsigned, unsigned)
SIMT_MIN_MAX(unsigned, int, unsigned)
SIMT_MIN_MAX(unsigned, unsigned, int)
SIMT_MIN_MAX(long, long, long)
SIMT_MIN_MAX(unsigned long, unsigned long, unsigned long)
SIMT_MIN_MAX(unsigned long, long, unsigned long)
SIMT_MIN_MAX(unsigned long, unsigned long, long)
SIMT_MIN_MAX(long long, long long, long long)
SIMT_MIN_MAX(unsigned long long, unsigned long long, unsigned long long)
SIMT_MIN_MAX(unsigned long long, long long, unsigned long long)
SIMT_MIN_MAX(unsigned long long, unsigned long long, long long)
#undef SIMT_MIN_MAX
inline float min(float a, float b) {
  return std::fmin(a, b);
}
inline float max(float a, float b) {
  return std::fmax(a, b);
}
inline double min(double a, double b) {
  return std::fmin(a, b);
}
inline double max(double a, double b) {
  return std::fmax(a, b);
}
inline double min(float a, double b) {
  return std::fmin(a, b);
}
inline double max(float a, double b) {
  return std::fmax(a, b);
}
inline double min(double a, float b) {
  return std::fmin(a, b);
}
inline double max(double a, float b) {
  return std::fmax(a, b);
}

// Timers and traps.
inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline void __nanosleep(unsigned) {}
// The kernel's thread stops with an error; the launch reports it as a std::runtime_error.
[[noreturn]] inline void __trap() {
  throw std::runtime_error("__trap() called");
}
[[noreturn]] inline void __brkpt() {
  throw std::runtime_error("__brkpt() called");
}
