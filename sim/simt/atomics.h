// CUDA atomics on std::atomic_ref, so ThreadSanitizer sees them as atomic accesses.
//
// Memory order is relaxed, as on the GPU: an atomic alone does not order other memory; a
// barrier or __threadfence does. Fibers are never preempted, so a thread that spins on a value
// another thread of the same block must change never gets past its loop (the emulator cannot
// detect that hang).
#pragma once

#include <atomic>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "sim/simt/runtime.h"

namespace simt::detail {

template <typename T>
std::atomic_ref<T> atomic(T* address) {
  return std::atomic_ref<T>(*address);
}

constexpr auto kRelaxed = std::memory_order_relaxed;

// Read-modify-write through compare-exchange for operations atomic_ref lacks.
template <typename T, typename Update>
T atomic_update(T* address, Update update) {
  auto ref = atomic(address);
  T old = ref.load(kRelaxed);
  while (!ref.compare_exchange_weak(old, update(old), kRelaxed, kRelaxed)) {
  }
  return old;
}

// 16-bit floats: add in fp32, round once, as the hardware does.
template <typename Half>
Half atomic_add_half(Half* address, Half value) {
  return atomic_update(
      address, [&](Half old) { return Half(static_cast<float>(old) + static_cast<float>(value)); });
}

template <typename T>
T atomic_cas(T* address, T compare, T value) {
  atomic(address).compare_exchange_strong(compare, value, kRelaxed, kRelaxed);
  return compare;  // holds the old value either way
}

}  // namespace simt::detail

#define SIMT_ATOMIC_FETCH(name, op, T)                                      \
  inline T name(T* address, T value) {                                      \
    return simt::detail::atomic(address).op(value, simt::detail::kRelaxed); \
  }

SIMT_ATOMIC_FETCH(atomicAdd, fetch_add, int)
SIMT_ATOMIC_FETCH(atomicAdd, fetch_add, unsigned int)
SIMT_ATOMIC_FETCH(atomicAdd, fetch_add, unsigned long long int)
SIMT_ATOMIC_FETCH(atomicAdd, fetch_add, float)
SIMT_ATOMIC_FETCH(atomicAdd, fetch_add, double)
SIMT_ATOMIC_FETCH(atomicSub, fetch_sub, int)
SIMT_ATOMIC_FETCH(atomicSub, fetch_sub, unsigned int)
SIMT_ATOMIC_FETCH(atomicAnd, fetch_and, int)
SIMT_ATOMIC_FETCH(atomicAnd, fetch_and, unsigned int)
SIMT_ATOMIC_FETCH(atomicAnd, fetch_and, unsigned long long int)
SIMT_ATOMIC_FETCH(atomicOr, fetch_or, int)
SIMT_ATOMIC_FETCH(atomicOr, fetch_or, unsigned int)
SIMT_ATOMIC_FETCH(atomicOr, fetch_or, unsigned long long int)
SIMT_ATOMIC_FETCH(atomicXor, fetch_xor, int)
SIMT_ATOMIC_FETCH(atomicXor, fetch_xor, unsigned int)
SIMT_ATOMIC_FETCH(atomicXor, fetch_xor, unsigned long long int)
SIMT_ATOMIC_FETCH(atomicExch, exchange, int)
SIMT_ATOMIC_FETCH(atomicExch, exchange, unsigned int)
SIMT_ATOMIC_FETCH(atomicExch, exchange, unsigned long long int)
SIMT_ATOMIC_FETCH(atomicExch, exchange, float)
SIMT_ATOMIC_FETCH(atomicExch, exchange, double)
#undef SIMT_ATOMIC_FETCH

// Min/max, including float and double (CAS; a NaN operand leaves the value unchanged).
#define SIMT_ATOMIC_MINMAX(name, keep_new, T)                                                     \
  inline T name(T* address, T value) {                                                            \
    return simt::detail::atomic_update(address, [&](T old) { return (keep_new) ? value : old; }); \
  }
SIMT_ATOMIC_MINMAX(atomicMin, value < old, int)
SIMT_ATOMIC_MINMAX(atomicMin, value < old, unsigned int)
SIMT_ATOMIC_MINMAX(atomicMin, value < old, long long int)
SIMT_ATOMIC_MINMAX(atomicMin, value < old, unsigned long long int)
SIMT_ATOMIC_MINMAX(atomicMin, value < old, float)
SIMT_ATOMIC_MINMAX(atomicMin, value < old, double)
SIMT_ATOMIC_MINMAX(atomicMax, value > old, int)
SIMT_ATOMIC_MINMAX(atomicMax, value > old, unsigned int)
SIMT_ATOMIC_MINMAX(atomicMax, value > old, long long int)
SIMT_ATOMIC_MINMAX(atomicMax, value > old, unsigned long long int)
SIMT_ATOMIC_MINMAX(atomicMax, value > old, float)
SIMT_ATOMIC_MINMAX(atomicMax, value > old, double)
#undef SIMT_ATOMIC_MINMAX

// ((old >= limit) ? 0 : old + 1), as CUDA defines it.
inline unsigned int atomicInc(unsigned int* address, unsigned int limit) {
  return simt::detail::atomic_update(address,
                                     [&](unsigned int old) { return old >= limit ? 0u : old + 1; });
}
// (((old == 0) || (old > limit)) ? limit : old - 1).
inline unsigned int atomicDec(unsigned int* address, unsigned int limit) {
  return simt::detail::atomic_update(
      address, [&](unsigned int old) { return (old == 0 || old > limit) ? limit : old - 1; });
}

inline int atomicCAS(int* address, int compare, int value) {
  return simt::detail::atomic_cas(address, compare, value);
}
inline unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int value) {
  return simt::detail::atomic_cas(address, compare, value);
}
inline unsigned long long int atomicCAS(unsigned long long int* address,
                                        unsigned long long int compare,
                                        unsigned long long int value) {
  return simt::detail::atomic_cas(address, compare, value);
}
inline unsigned short int atomicCAS(unsigned short int* address, unsigned short int compare,
                                    unsigned short int value) {
  return simt::detail::atomic_cas(address, compare, value);
}

inline __half atomicAdd(__half* address, __half value) {
  return simt::detail::atomic_add_half(address, value);
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* address, __nv_bfloat16 value) {
  return simt::detail::atomic_add_half(address, value);
}

// Scoped variants: one device, one scope.
#define SIMT_ATOMIC_SCOPED(name)                \
  template <typename T, typename... U>          \
  auto name##_block(T* address, U... values) {  \
    return name(address, values...);            \
  }                                             \
  template <typename T, typename... U>          \
  auto name##_system(T* address, U... values) { \
    return name(address, values...);            \
  }
SIMT_ATOMIC_SCOPED(atomicAdd)
SIMT_ATOMIC_SCOPED(atomicSub)
SIMT_ATOMIC_SCOPED(atomicExch)
SIMT_ATOMIC_SCOPED(atomicMin)
SIMT_ATOMIC_SCOPED(atomicMax)
SIMT_ATOMIC_SCOPED(atomicInc)
SIMT_ATOMIC_SCOPED(atomicDec)
SIMT_ATOMIC_SCOPED(atomicAnd)
SIMT_ATOMIC_SCOPED(atomicOr)
SIMT_ATOMIC_SCOPED(atomicXor)
SIMT_ATOMIC_SCOPED(atomicCAS)
#undef SIMT_ATOMIC_SCOPED

// Fences order this thread's memory operations for every thread that fences later.
inline void __threadfence() {
  simt::detail::thread_fence();
}
inline void __threadfence_block() {
  simt::detail::thread_fence();
}
inline void __threadfence_system() {
  simt::detail::thread_fence();
}
