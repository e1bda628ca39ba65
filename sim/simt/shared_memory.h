// Shared memory under emulation.
//
// Static: `__shared__ float tile[32][33];` becomes a function-local `static` (`static
// thread_local` under TSan, see below), so all threads of a block (all fibers) see one object;
// blocks run one after another, so one object per kernel is enough. Before each block the emulator
// fills every such variable with 0xFF bytes (NaN for floats, -1 for integers) so a read before the
// first write shows up in the results instead of silently seeing the previous block's data.
//
// Finding those variables: g++ 12 ignores `__attribute__((section))` on static locals of
// templates (checked: they land in .bss.<name>), so a dedicated section would miss every
// template kernel. Instead the macro plants a marker object `simt_smem_marker_<n>` next to the
// variable; its mangled name `_ZZ<function>E...` names the enclosing function, and at the first
// launch the emulator reads the executable's symbol table and collects the writable static
// locals of every function that has a marker (self_image.cpp). Consequences:
//   - `__shared__` must be the first word of the declaration (`__shared__ volatile int x;`,
//     not `volatile __shared__ int x;`), as the marker is a declaration of its own;
//   - a non-const, non-__shared__ `static` local in a function that also has a __shared__
//     variable is filled too (CUDA device code has practically no such variables);
//   - namespace-scope __shared__ variables work but are not NaN-filled;
//   - the executable must keep its symbol table (not stripped).
//
// Dynamic: kernels write DYNAMIC_SHARED_MEMORY(T, name) (kernels/cuda/launch.h defines it for
// nvcc as `extern __shared__`). Here `name` points at a heap buffer of exactly smem_bytes, so
// AddressSanitizer reports an access past the end, NaN-filled before each block.
#pragma once

#include "sim/simt/runtime.h"

#define SIMT_CAT_IMPL(a, b) a##b
#define SIMT_CAT(a, b) SIMT_CAT_IMPL(a, b)

// Under ThreadSanitizer each OS thread has its own copy (thread_local): on the sim device two
// streams' workers run kernels, and one object shared by both would either be reported as a
// race between two launches of the same kernel (CUDA gives each block fresh shared memory) or
// need an ordering between the workers that would hide their real races. Plain builds keep
// one object: launches take turns (launch.cpp), and `static` costs nothing to address.
#if defined(__SANITIZE_THREAD__)
#define SIMT_SHARED_STORAGE static thread_local
#else
#define SIMT_SHARED_STORAGE static
#endif

#undef __shared__
#define __shared__                                         \
  [[maybe_unused]] static __attribute__((used))            \
  const char SIMT_CAT(simt_smem_marker_, __COUNTER__) = 0; \
  SIMT_SHARED_STORAGE

#define DYNAMIC_SHARED_MEMORY(T, name) \
  T* name = static_cast<T*>(::simt::detail::dynamic_shared_memory())
