// engine::sim::launch: kernel<<<grid, block, smem_bytes, stream>>>(args...) on the sim device.
// kernels/cuda/launch.h makes it engine::cuda::launch in the CUDA backend's .cu files of an
// ENGINE_CUDA=SIM build (kernel_prelude.h includes it).
//
// As on a GPU, the call only queues the kernel on the stream: a bad configuration fails the
// launch itself (cudaGetLastError, so CHECK_CUDA reports it where the launcher is), and a fault
// while the kernel runs makes the device's error sticky (cudaErrorLaunchFailure), seen by the
// next call that synchronizes. The kernel itself runs under the SIMT emulator.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/cuda/check_cuda.h"
#include "sim/simt/launch.h"

namespace engine::sim {

// What a kernel may have without cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemory
// Size): a launch asking for more fails on a GPU, so here too.
constexpr std::size_t kDefaultDynamicSharedBytes = 48 * 1024;

// The dynamic shared memory a launch of `kernel` may ask for on the current device: what
// cudaFuncSetAttribute (function_attributes.cpp) last allowed there, else the default.
std::size_t max_dynamic_shared_bytes(const void* kernel);

struct KernelLaunch {
  void (*kernel)() = nullptr;  // only to name the kernel in messages
  dim3 grid, block;
  std::size_t dynamic_smem_bytes = 0;
  std::function<void()> run;  // runs the whole grid under the emulator
};

// Checks the configuration as CUDA does (the error goes to cudaGetLastError) and queues the
// kernel on `stream`.
void enqueue_kernel(cudaStream_t stream, KernelLaunch launch);

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem_bytes,
            cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "sim::launch: the number of arguments differs from the kernel's parameters");
  // Converted and copied now, as a real launch copies its parameters: the caller's variables
  // may change or end before the stream's worker runs the kernel.
  auto params = std::make_shared<const std::tuple<std::decay_t<Params>...>>(
      static_cast<Params>(std::forward<Args>(args))...);
  KernelLaunch spec;
  spec.kernel = reinterpret_cast<void (*)()>(kernel);
  spec.grid = grid;
  spec.block = block;
  spec.dynamic_smem_bytes = smem_bytes;
  // Moved, not copied: the worker must hold the only reference, so the parameters are freed
  // where they were read (a free on the host, unordered with the kernel, is a race for TSan).
  spec.run = [kernel, grid, block, smem_bytes, stream, params = std::move(params)] {
    std::apply(
        [&](const auto&... p) { simt::launch(kernel, grid, block, smem_bytes, stream, p...); },
        *params);
  };
  enqueue_kernel(stream, std::move(spec));
  CHECK_CUDA(cudaGetLastError());
}

}  // namespace engine::sim
