#include "kernels/cpu/activation.h"

#include "kernels/cuda/activation.h"
#include "kernels/ops/activation.h"
#include "kernels/ops/checks.h"
#include "kernels/ops/dispatch.h"

namespace engine {

void relu_forward(const Tensor& x, Tensor& y, Stream& stream) {
  constexpr std::string_view op = "relu_forward";
  ops::require_float(op, "x", x);
  ops::require_like(op, "x", x, "y", y);
  ops::require_on_stream(op, "x", x, stream);
  ops::on_device(
      op, stream, [&] { cpu::relu_forward(x.dtype(), x.raw_data(), y.raw_data(), x.numel()); },
      [&](auto cuda_stream) {
        cuda::relu_forward(x.dtype(), x.raw_data(), y.raw_data(), x.numel(), cuda_stream);
      });
}

void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx, Stream& stream) {
  constexpr std::string_view op = "relu_backward";
  ops::require_float(op, "y", y);
  ops::require_like(op, "y", y, "dy", dy);
  ops::require_like(op, "y", y, "dx", dx);
  ops::require_on_stream(op, "y", y, stream);
  ops::on_device(
      op, stream,
      [&] { cpu::relu_backward(y.dtype(), y.raw_data(), dy.raw_data(), dx.raw_data(), y.numel()); },
      [&](auto cuda_stream) {
        cuda::relu_backward(y.dtype(), y.raw_data(), dy.raw_data(), dx.raw_data(), y.numel(),
                            cuda_stream);
      });
}

namespace {

// y = a + b (relu: then max(., 0)): the checks and dispatch of add and add_relu_forward.
void add_maybe_relu(std::string_view op, bool relu, const Tensor& a, const Tensor& b, Tensor& y,
                    Stream& stream) {
  ops::require_float(op, "a", a);
  ops::require_like(op, "a", a, "b", b);
  ops::require_like(op, "a", a, "y", y);
  ops::require_on_stream(op, "a", a, stream);
  ops::on_device(
      op, stream,
      [&] {
        (relu ? cpu::add_relu_forward : cpu::add)(a.dtype(), a.raw_data(), b.raw_data(),
                                                  y.raw_data(), a.numel());
      },
      [&](auto cuda_stream) {
        (relu ? cuda::add_relu_forward : cuda::add)(a.dtype(), a.raw_data(), b.raw_data(),
                                                    y.raw_data(), a.numel(), cuda_stream);
      });
}

}  // namespace

void add_relu_forward(const Tensor& a, const Tensor& b, Tensor& y, Stream& stream) {
  add_maybe_relu("add_relu_forward", true, a, b, y, stream);
}

void add(const Tensor& a, const Tensor& b, Tensor& y, Stream& stream) {
  add_maybe_relu("add", false, a, b, y, stream);
}

}  // namespace engine
