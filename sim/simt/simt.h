// The SIMT emulator: include this before any kernels/cuda/*.cuh and g++ compiles the unchanged
// CUDA kernels and runs them on the CPU through simt::launch (which kernels/cuda/launch.h makes
// engine::cuda::launch). One block at a time, every CUDA thread a fiber; see DESIGN.md, "SIMT
// emulator". What kernels can use:
//   qualifiers     __global__ __device__ __host__ __constant__ __forceinline__ __noinline__
//                  __launch_bounds__(...) __align__(n) __restrict__            (cuda_keywords.h)
//   built-ins      threadIdx blockIdx blockDim gridDim warpSize
//   shared memory  __shared__ (first word of the declaration), DYNAMIC_SHARED_MEMORY(T, name)
//   barriers       __syncthreads[_count|_and|_or] __syncwarp __shfl[_up|_down|_xor]_sync
//                  __ballot_sync __any_sync __all_sync __activemask __reduce_*_sync
//                  __match_any_sync __match_all_sync                                (sync.h)
//   atomics        atomicAdd/Sub/Exch/Min/Max/Inc/Dec/And/Or/Xor/CAS (+_block/_system),
//                  __threadfence[_block|_system]                                 (atomics.h)
//   math           __expf __logf __fdividef rsqrtf __saturatef __ldg __fmaf_rn __float2int_rn
//                  __popc __clz __ffs min max ...                              (device_math.h)
//   tensor cores   nvcuda::wmma fragments, load/store_matrix_sync, mma_sync          (wmma.h)
//                  ldmatrix .x4 and mma.sync m16n8k16 bf16, through kernels/cuda/warp_mma.cuh
//                                                                             (warp_matrix.h)
//   async copies   cp.async with zero fill, commit_group, wait_group, through
//                  kernels/cuda/async_copy.cuh                                 (async_copy.h)
//   __half and __nv_bfloat16 come from CUDA's own headers; printf and assert work as on the host.
// Not emulated: cooperative groups, inline PTX (warp_mma.cuh's wrappers call warp_matrix.h's
// emulations here instead of their PTX), texture/surface objects, code under __CUDA_ARCH__
// (never defined here), dynamic parallelism.
#pragma once

#define SIMT_EMULATOR 1

#include "sim/simt/cuda_keywords.h"
// The order below matters only in that cuda_keywords.h comes first.
#include "sim/simt/async_copy.h"
#include "sim/simt/atomics.h"
#include "sim/simt/device_math.h"
#include "sim/simt/launch.h"
#include "sim/simt/runtime.h"
#include "sim/simt/shared_memory.h"
#include "sim/simt/sync.h"
#include "sim/simt/warp_matrix.h"
#include "sim/simt/wmma.h"

#include <cstdio>
