#include "kernels/cpu/activation.h"

#include "kernels/ops/activation.h"
#include "kernels/ops/checks.h"
#if ENGINE_HAVE_CUDA
#include "kernels/cuda/activation.h"
#endif

namespace engine {

void relu_forward(const Tensor& x, Tensor& y, Stream& stream) {
  ops::require_like("relu_forward", "x", x, "y", y);
  ops::require_on_stream("relu_forward", "x", x, stream);
  if (x.device().is_cpu()) {
    cpu::relu_forward(x.dtype(), x.raw_data(), y.raw_data(), x.numel());
  } else {
#if ENGINE_HAVE_CUDA
    cuda::relu_forward(x.dtype(), x.raw_data(), y.raw_data(), x.numel(), stream.native());
#endif
  }
}

void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx, Stream& stream) {
  ops::require_like("relu_backward", "y", y, "dy", dy);
  ops::require_like("relu_backward", "y", y, "dx", dx);
  ops::require_on_stream("relu_backward", "y", y, stream);
  if (y.device().is_cpu()) {
    cpu::relu_backward(y.dtype(), y.raw_data(), dy.raw_data(), dx.raw_data(), y.numel());
  } else {
#if ENGINE_HAVE_CUDA
    cuda::relu_backward(y.dtype(), y.raw_data(), dy.raw_data(), dx.raw_data(), y.numel(),
                        stream.native());
#endif
  }
}

void add_relu_forward(const Tensor& a, const Tensor& b, Tensor& y, Stream& stream) {
  ops::require_like("add_relu_forward", "a", a, "b", b);
  ops::require_like("add_relu_forward", "a", a, "y", y);
  ops::require_on_stream("add_relu_forward", "a", a, stream);
  if (a.device().is_cpu()) {
    cpu::add_relu_forward(a.dtype(), a.raw_data(), b.raw_data(), y.raw_data(), a.numel());
  } else {
#if ENGINE_HAVE_CUDA
    cuda::add_relu_forward(a.dtype(), a.raw_data(), b.raw_data(), y.raw_data(), a.numel(),
                           stream.native());
#endif
  }
}

}  // namespace engine
