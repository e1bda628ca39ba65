// The one place an op chooses its backend. Every op checks its arguments, then calls
//   const XArgs args{...};  // kernels/args/<family>.h, filled once for both backends
//   ops::on_device(op, stream, [&] { cpu::x(args); },
//                  [&](auto cuda_stream) { cuda::x(args, cuda_stream); });
// The CUDA branch is a generic lambda so that a build without CUDA never instantiates it
// (the cuda:: entry points are declared everywhere but defined only by the CUDA objects):
// there, a CUDA stream is a clear error instead of an op that silently does nothing.
#pragma once

#include <string_view>

#include "kernels/cuda/cuda_runtime.h"
#include "kernels/device.h"
#include "kernels/stream.h"

namespace engine::ops {

inline constexpr bool kCudaBuilt = ENGINE_HAVE_CUDA;

// Throws: "<op>: <device> tensors need the CUDA backend; this build has none (...)".
[[noreturn]] void fail_without_cuda_backend(std::string_view op, Device device);

// Runs on_cpu() for a CPU device, on_cuda(native stream) for a CUDA device. cuda_built is a
// parameter only so that a test can exercise the branch a CPU-only build takes.
template <bool cuda_built = kCudaBuilt, typename OnCpu, typename OnCuda>
void on_device(std::string_view op, Device device, cudaStream_t native_stream, OnCpu&& on_cpu,
               OnCuda&& on_cuda) {
  if (device.is_cpu()) {
    on_cpu();
  } else if constexpr (cuda_built) {
    on_cuda(native_stream);
  } else {
    fail_without_cuda_backend(op, device);
  }
}

// The usual form: the op runs on the stream's device (require_on_stream checked the tensors).
template <typename OnCpu, typename OnCuda>
void on_device(std::string_view op, const Stream& stream, OnCpu&& on_cpu, OnCuda&& on_cuda) {
  on_device(op, stream.device(), stream.native(), on_cpu, on_cuda);
}

}  // namespace engine::ops
