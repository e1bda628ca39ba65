#include "kernels/ops/pool.h"

#include <cstdint>
#include <string>

#include "kernels/cpu/pool.h"
#include "kernels/cuda/pool.h"
#include "kernels/ops/checks.h"
#include "kernels/ops/dispatch.h"

namespace engine {
namespace {

void require_nhwc(ops::OpName op, std::string_view name, const Tensor& t) {
  ops::require_float(op, name, t);
  if (t.dim() != 4 || t.numel() == 0) {
    fail(std::string(op) + ": " + std::string(name) + " is " + t.describe() +
         ", expected a non-empty [N, H, W, C] tensor");
  }
}

void require_params(ops::OpName op, const MaxPool2dParams& p, const Tensor& x) {
  if (p.kernel < 1 || p.stride < 1 || p.padding < 0 || 2 * p.padding > p.kernel) {
    fail(std::string(op) + ": kernel " + std::to_string(p.kernel) + ", stride " +
         std::to_string(p.stride) + ", padding " + std::to_string(p.padding) +
         " is not a valid max pooling (kernel, stride >= 1; 0 <= 2 * padding <= kernel)");
  }
  if (p.kernel > MaxPool2dParams::kMaxKernel) {
    fail(std::string(op) + ": a " + std::to_string(p.kernel) + "x" + std::to_string(p.kernel) +
         " window has " + std::to_string(p.kernel * p.kernel) +
         " positions, over the 256 a u8 argmax holds (kernel <= " +
         std::to_string(MaxPool2dParams::kMaxKernel) + ")");
  }
  if (x.size(1) > INT32_MAX || x.size(2) > INT32_MAX || x.size(3) > INT32_MAX) {
    fail(std::string(op) + ": " + x.describe() +
         " has an extent over 2^31 - 1 (max pooling indexes within an image in 32 bits)");
  }
  if (p.output_size(x.size(1)) < 1 || p.output_size(x.size(2)) < 1) {
    fail(std::string(op) + ": the " + std::to_string(p.kernel) + "x" + std::to_string(p.kernel) +
         " window does not fit " + x.describe());
  }
}

// [N, H, W, C] and the pooled [N, OH, OW, C].
Shape pooled_shape(const MaxPool2dParams& p, const Tensor& x) {
  return {x.size(0), p.output_size(x.size(1)), p.output_size(x.size(2)), x.size(3)};
}

MaxPool2dGeometry pool_geometry(const MaxPool2dParams& params, const Tensor& x) {
  return MaxPool2dGeometry::make(params, x.size(0), x.size(1), x.size(2), x.size(3));
}

// y of global average pooling: [N, C] or [N, 1, 1, C].
void require_pooled_vector(ops::OpName op, std::string_view name, const Tensor& t,
                           const Tensor& x) {
  const Shape flat = {x.size(0), x.size(3)};
  const Shape keepdim = {x.size(0), 1, 1, x.size(3)};
  ops::require_defined(op, name, t);
  if ((t.shape() != flat && t.shape() != keepdim) || t.dtype() != x.dtype() ||
      t.device() != x.device()) {
    fail(std::string(op) + ": " + std::string(name) + " is " + t.describe() + ", expected " +
         std::string(dtype_name(x.dtype())) + shape_str(flat) + " or " + shape_str(keepdim) +
         " on " + x.device().str());
  }
}

}  // namespace

void maxpool2d_forward(const MaxPool2dParams& params, MaxPool2dForwardOperands operands,
                       Stream& stream) {
  constexpr ops::OpName op{"maxpool2d_forward"};
  require_nhwc(op, "x", operands.x);
  require_params(op, params, operands.x);
  const Shape out = pooled_shape(params, operands.x);
  ops::require_exact(op, "y", operands.y, out, operands.x.dtype(), operands.x.device());
  ops::require_exact(op, "argmax", operands.argmax, out, DType::u8, operands.x.device());
  ops::require_on_stream(op, "x", operands.x, stream);
  const MaxPool2dForwardArgs args{.dtype = operands.x.dtype(),
                                  .x = operands.x.raw_data(),
                                  .y = operands.y.raw_data(),
                                  .argmax = operands.argmax.data<uint8_t>(),
                                  .geometry = pool_geometry(params, operands.x)};
  ops::on_device(
      op, stream, [&] { cpu::maxpool2d_forward(args); },
      [&](auto cuda_stream) { cuda::maxpool2d_forward(args, cuda_stream); });
}

void maxpool2d_backward(const MaxPool2dParams& params, MaxPool2dBackwardOperands operands,
                        Stream& stream) {
  constexpr ops::OpName op{"maxpool2d_backward"};
  require_nhwc(op, "dx", operands.dx);
  require_params(op, params, operands.dx);
  const Shape out = pooled_shape(params, operands.dx);
  ops::require_exact(op, "dy", operands.dy, out, operands.dx.dtype(), operands.dx.device());
  ops::require_exact(op, "argmax", operands.argmax, out, DType::u8, operands.dx.device());
  ops::require_on_stream(op, "dx", operands.dx, stream);
  const MaxPool2dBackwardArgs args{.dtype = operands.dx.dtype(),
                                   .dy = operands.dy.raw_data(),
                                   .argmax = operands.argmax.data<uint8_t>(),
                                   .dx = operands.dx.raw_data(),
                                   .geometry = pool_geometry(params, operands.dx)};
  ops::on_device(
      op, stream, [&] { cpu::maxpool2d_backward(args); },
      [&](auto cuda_stream) { cuda::maxpool2d_backward(args, cuda_stream); });
}

void global_avgpool_forward(const Tensor& x, Tensor& y, Stream& stream) {
  constexpr ops::OpName op{"global_avgpool_forward"};
  require_nhwc(op, "x", x);
  require_pooled_vector(op, "y", y, x);
  ops::require_on_stream(op, "x", x, stream);
  const GlobalAvgPoolForwardArgs args{.dtype = x.dtype(),
                                      .x = x.raw_data(),
                                      .y = y.raw_data(),
                                      .n = x.size(0),
                                      .spatial = x.size(1) * x.size(2),
                                      .c = x.size(3)};
  ops::on_device(
      op, stream, [&] { cpu::global_avgpool_forward(args); },
      [&](auto cuda_stream) { cuda::global_avgpool_forward(args, cuda_stream); });
}

void global_avgpool_backward(const Tensor& dy, Tensor& dx, Stream& stream) {
  constexpr ops::OpName op{"global_avgpool_backward"};
  require_nhwc(op, "dx", dx);
  require_pooled_vector(op, "dy", dy, dx);
  ops::require_on_stream(op, "dx", dx, stream);
  const GlobalAvgPoolBackwardArgs args{.dtype = dx.dtype(),
                                       .dy = dy.raw_data(),
                                       .dx = dx.raw_data(),
                                       .n = dx.size(0),
                                       .spatial = dx.size(1) * dx.size(2),
                                       .c = dx.size(3)};
  ops::on_device(
      op, stream, [&] { cpu::global_avgpool_backward(args); },
      [&](auto cuda_stream) { cuda::global_avgpool_backward(args, cuda_stream); });
}

}  // namespace engine
