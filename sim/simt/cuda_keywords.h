// CUDA's host headers plus the keyword macros that let g++ compile device code unchanged.
//
// Qualifiers that only tell nvcc where code runs (__global__, __device__, __host__) become
// nothing: under emulation every function is a host function. The built-in variables
// (threadIdx, blockIdx, blockDim, gridDim, warpSize) are ordinary globals that the scheduler
// rewrites whenever it switches to another CUDA thread, so `threadIdx.x` reads the value of the
// fiber that is running.
#pragma once

// libstdc++ spells a GCC attribute `__noinline__`, which becomes a macro below: include the
// headers that use it first (their include guards keep them from being parsed again).
#include <memory>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <vector_functions.h>
#include <vector_types.h>

// device_launch_parameters.h declares the built-in variables `extern const` unless __STORAGE__
// is already defined; the emulator needs them writable (they are defined in builtins.cpp). The
// header #undefs __STORAGE__ itself, and a kernel that includes it again gets a no-op.
#define __STORAGE__ extern
#include <device_launch_parameters.h>

#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __host__
#define __host__
#undef __constant__
#define __constant__
#undef __managed__
#define __managed__
#undef __grid_constant__
#define __grid_constant__
// Plain `inline`: always_inline across sanitizer-instrumented code can fail to compile.
#undef __forceinline__
#define __forceinline__ inline
#undef __noinline__
#define __noinline__ __attribute__((noinline))
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __align__
#define __align__(n) __attribute__((aligned(n)))
// __restrict__ is a g++ keyword already.
