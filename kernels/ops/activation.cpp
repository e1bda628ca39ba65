#include "kernels/cpu/activation.h"

#include "kernels/cuda/activation.h"
#include "kernels/ops/activation.h"
#include "kernels/ops/checks.h"
#include "kernels/ops/dispatch.h"

namespace engine {

void relu_forward(const Tensor& x, Tensor& y, Stream& stream) {
  constexpr ops::OpName op{"relu_forward"};
  ops::require_float(op, "x", x);
  ops::require_like(op, "x", x, "y", y);
  ops::require_on_stream(op, "x", x, stream);
  const ReluForwardArgs args{
      .dtype = x.dtype(), .x = x.raw_data(), .y = y.raw_data(), .n = x.numel()};
  ops::on_device(
      op, stream, [&] { cpu::relu_forward(args); },
      [&](auto cuda_stream) { cuda::relu_forward(args, cuda_stream); });
}

void relu_backward(ReluBackwardOperands operands, Stream& stream) {
  constexpr ops::OpName op{"relu_backward"};
  ops::require_float(op, "y", operands.y);
  ops::require_like(op, "y", operands.y, "dy", operands.dy);
  ops::require_like(op, "y", operands.y, "dx", operands.dx);
  ops::require_on_stream(op, "y", operands.y, stream);
  const ReluBackwardArgs args{.dtype = operands.y.dtype(),
                              .y = operands.y.raw_data(),
                              .dy = operands.dy.raw_data(),
                              .dx = operands.dx.raw_data(),
                              .n = operands.y.numel()};
  ops::on_device(
      op, stream, [&] { cpu::relu_backward(args); },
      [&](auto cuda_stream) { cuda::relu_backward(args, cuda_stream); });
}

namespace {

// y = a + b (relu: then max(., 0)): the checks and dispatch of add and add_relu_forward.
void add_maybe_relu(ops::OpName op, bool relu, const Tensor& a, const Tensor& b, Tensor& y,
                    Stream& stream) {
  ops::require_float(op, "a", a);
  ops::require_like(op, "a", a, "b", b);
  ops::require_like(op, "a", a, "y", y);
  ops::require_on_stream(op, "a", a, stream);
  const AddArgs args{.dtype = a.dtype(),
                     .a = a.raw_data(),
                     .b = b.raw_data(),
                     .y = y.raw_data(),
                     .n = a.numel(),
                     .relu = relu};
  ops::on_device(
      op, stream, [&] { cpu::add(args); }, [&](auto cuda_stream) { cuda::add(args, cuda_stream); });
}

}  // namespace

void add_relu_forward(AddReluForwardOperands operands, Stream& stream) {
  add_maybe_relu(ops::OpName{"add_relu_forward"}, true, operands.a, operands.b, operands.y, stream);
}

void add(AddOperands operands, Stream& stream) {
  add_maybe_relu(ops::OpName{"add"}, false, operands.a, operands.b, operands.y, stream);
}

}  // namespace engine
