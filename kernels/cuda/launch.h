// The one way launchers start a kernel: launch(kernel, grid, block, smem_bytes, stream, args...).
//
// Under nvcc this is a real <<<...>>> launch followed by an error check. Under the SIMT
// emulator (sim/simt/simt.h, included before any kernel header) the same call runs the
// kernel on the CPU, one block at a time, each CUDA thread a fiber; on the sim device
// (sim/cuda/launch.h) it is queued on the stream and then run so. Launchers never use
// <<<...>>> themselves, so every kernel can be checked in CI without a GPU. On a GPU and on the
// sim device each launch is counted (kernels/kernel_launches.h).
//
// Kernels that need dynamic shared memory declare it with DYNAMIC_SHARED_MEMORY(T, name),
// which is `extern __shared__` on the GPU and a per-block, NaN-filled buffer under emulation.
// A launch of more than 48 KiB of it is refused unless allow_dynamic_shared_memory(kernel,
// bytes) came first (cudaFuncSetAttribute's opt-in, up to the device's per-block maximum).
//
// A kernels/cuda/<family>.cuh defines non-inline entry points, so it is included by exactly
// one translation unit per binary: its .cu in the library, or one emulator test.
#pragma once

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#include "kernels/cuda/check_cuda.h"
#include "kernels/kernel_launches.h"

#define DYNAMIC_SHARED_MEMORY(T, name)                                  \
  extern __shared__ __align__(16) unsigned char engine_dynamic_smem_[]; \
  T* name = reinterpret_cast<T*>(engine_dynamic_smem_)

namespace engine::cuda {

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
            cudaStream_t stream, Args&&... args) {
  count_kernel_launch(reinterpret_cast<const void*>(kernel));
  kernel<<<grid, block, smem_bytes, stream>>>(static_cast<Params>(args)...);
  CHECK_CUDA(cudaGetLastError());
}

}  // namespace engine::cuda

#elif defined(ENGINE_SIM_DEVICE_LAUNCH)

// The sim device (ENGINE_CUDA=SIM, sim/cuda/kernel_prelude.h): queued on the stream's
// worker, then run under the SIMT emulator.
#include <cstddef>
#include <utility>

#include "kernels/kernel_launches.h"

namespace engine::cuda {
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem_bytes,
            cudaStream_t stream, Args&&... args) {
  count_kernel_launch(reinterpret_cast<const void*>(kernel));
  sim::launch(kernel, grid, block, smem_bytes, stream, std::forward<Args>(args)...);
}
}  // namespace engine::cuda

#elif defined(SIMT_EMULATOR)

#include <cstddef>

namespace engine::cuda {
using simt::launch;
// The emulator takes up to sm_90's opt-in maximum (simt::detail::kMaxDynamicSharedBytes).
template <typename... Params>
void allow_dynamic_shared_memory(void (*)(Params...), size_t) {}
}  // namespace engine::cuda

#else
#error "kernels/cuda/*.cuh compile with nvcc, or with g++ after sim/simt/simt.h (SIMT emulator)"
#endif

#if defined(__CUDACC__) || defined(ENGINE_SIM_DEVICE_LAUNCH)

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/cuda/check_cuda.h"

namespace engine::cuda {

// Per function and device (the current one), so called before each such launch: cheap, and
// right on whichever device the launch goes to. The sim device keeps the opt-in as CUDA does
// (sim/cuda/function_attributes.cpp) and holds launches to it.
template <typename... Params>
void allow_dynamic_shared_memory(void (*kernel)(Params...), size_t bytes) {
  if (bytes <= 48 * 1024) return;  // what every kernel may have without opting in
  CHECK_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
}

}  // namespace engine::cuda

#endif
