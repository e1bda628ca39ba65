// The sim device's half of a kernel launch: CUDA's configuration checks, then the kernel on
// the stream's worker, with a fault turned into the sticky error CUDA would give.
//
// ENGINE_SIM_KERNELS=skip checks and queues every launch but runs no kernel: what is computed
// is then garbage, but which kernels a step launches depends on its shapes alone, so a launch
// census at a GPU's sizes (bench_step --launches-only --launch-census at 224 px, batch 128)
// takes seconds instead of emulated hours. Any other value fails every launch, saying why.
#include "sim/cuda/launch.h"

#include <cstdlib>
#include <exception>
#include <string>
#include <utility>

#include "sim/cuda/errors.h"
#include "sim/cuda/streams.h"
#include "sim/simt/runtime.h"
#include "sim/simt/self_image.h"

namespace engine::sim {
namespace {

std::string kernel_name(const KernelLaunch& launch) {
  return simt::detail::function_name(reinterpret_cast<const void*>(launch.kernel));
}

enum class KernelMode { run, skip, invalid };

// ENGINE_SIM_KERNELS, read once.
KernelMode kernel_mode() {
  static const KernelMode mode = [] {
    const char* text = std::getenv("ENGINE_SIM_KERNELS");
    const std::string value = text == nullptr ? "" : text;
    return value.empty() || value == "run" ? KernelMode::run
           : value == "skip"               ? KernelMode::skip
                                           : KernelMode::invalid;
  }();
  return mode;
}

}  // namespace

void enqueue_kernel(cudaStream_t stream, KernelLaunch launch) {
  if (const cudaError_t sticky = sticky_error()) {
    result(sticky);
    return;
  }
  simt::detail::KernelLaunch shape;
  shape.kernel = launch.kernel;
  shape.grid = launch.grid;
  shape.block = launch.block;
  shape.dynamic_smem_bytes = launch.dynamic_smem_bytes;
  const std::string invalid = simt::detail::invalid_configuration(shape);
  if (!invalid.empty()) {
    explain("launch of " + kernel_name(launch) + " rejected: " + invalid);
    result(cudaErrorInvalidConfiguration);
    return;
  }
  const std::size_t allowed =
      max_dynamic_shared_bytes(reinterpret_cast<const void*>(launch.kernel));
  if (launch.dynamic_smem_bytes > allowed) {
    explain("launch of " + kernel_name(launch) +
            " rejected: " + std::to_string(launch.dynamic_smem_bytes) +
            " bytes of dynamic shared memory exceed the " + std::to_string(allowed) +
            " it may have on this device (48 KiB unless cudaFuncSetAttribute(..., "
            "cudaFuncAttributeMaxDynamicSharedMemorySize, ...) allowed more)");
    result(cudaErrorInvalidValue);
    return;
  }
  if (kernel_mode() == KernelMode::invalid) {
    explain("launch of " + kernel_name(launch) +
            " rejected: ENGINE_SIM_KERNELS=" + std::getenv("ENGINE_SIM_KERNELS") +
            ", where the sim device takes run (the default) " + "or skip");
    result(cudaErrorInvalidValue);
    return;
  }
  if (kernel_mode() == KernelMode::skip) return;
  const std::string name = kernel_name(launch);
  result(enqueue(stream, [run = std::move(launch.run), name] {
    if (sticky_error() != cudaSuccess) return;  // a faulted device runs nothing more
    try {
      run();
    } catch (const std::exception& fault) {
      set_sticky_error(cudaErrorLaunchFailure, "kernel " + name + " faulted: " + fault.what());
    }
  }));
}

}  // namespace engine::sim
