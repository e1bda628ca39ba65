// simt::launch: the emulator's replacement for kernel<<<grid, block, smem_bytes, stream>>>(...).
// kernels/cuda/launch.h makes it engine::cuda::launch when SIMT_EMULATOR is defined.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>

#include "sim/simt/runtime.h"

namespace simt {

// Runs `kernel` on the CPU and returns when it has finished: blocks one at a time in order (x
// fastest), each CUDA thread a fiber. The stream is ignored (every launch is synchronous).
// Arguments are converted to the kernel's parameter types as a real launch would, and each
// thread gets its own copy of the parameters.
//
// Validates the configuration like CUDA (std::invalid_argument), reports a kernel exception or
// a deadlock as std::runtime_error naming the kernel, block and waiting threads, and a write
// into the guards of a live simt::GuardedBuffer (guarded_buffer.h) as std::runtime_error
// naming the kernel, the buffer and the byte offsets. One host
// thread at a time: concurrent calls from several host threads are serialized.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem_bytes,
            cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "simt::launch: the number of arguments differs from the kernel's parameters");
  (void)stream;
  using Kernel = void (*)(Params...);
  struct Closure {
    Kernel kernel;
    std::tuple<std::decay_t<Params>...> params;
  };
  const Closure closure{kernel, std::tuple<std::decay_t<Params>...>(
                                    static_cast<Params>(std::forward<Args>(args))...)};
  detail::KernelLaunch spec;
  spec.kernel = reinterpret_cast<void (*)()>(kernel);
  spec.invoke = [](const void* erased) {
    const Closure& c = *static_cast<const Closure*>(erased);
    std::apply(c.kernel, c.params);  // copies the parameters: kernels may modify their own
  };
  spec.closure = &closure;
  spec.grid = grid;
  spec.block = block;
  spec.dynamic_smem_bytes = smem_bytes;
  detail::run_launch(spec);
}

}  // namespace simt
