#include "kernels/ops/conv.h"

#include <string>

#include "kernels/cpu/conv.h"
#include "kernels/error.h"
#include "kernels/ops/checks.h"
#if ENGINE_HAVE_CUDA
#include "kernels/cuda/conv.h"
#endif

namespace engine {

namespace {

// t has exactly `expected` shape, `dtype`, and `device`.
void require_tensor(std::string_view op, std::string_view name, const Tensor& t,
                    const Shape& expected, DType dtype, Device device, const Conv2dShape& shape) {
  ops::require_defined(op, name, t);
  if (t.shape() != expected || t.dtype() != dtype || t.device() != device) {
    fail(std::string(op) + ": " + std::string(name) + " is " + t.describe() + ", expected " +
         std::string(dtype_name(dtype)) + shape_str(expected) + " on " + device.str() + " for " +
         shape.str());
  }
}

void require_grad_dtype(std::string_view op, const Tensor& dw, DType activation_dtype) {
  if (dw.dtype() != DType::f32 && dw.dtype() != activation_dtype) {
    fail(std::string(op) + ": dw is " + dw.describe() + ", expected f32 or " +
         std::string(dtype_name(activation_dtype)));
  }
}

template <typename TensorPtr>
auto bias_pointer(TensorPtr bias) {
  return bias == nullptr ? nullptr : bias->template data<float>();
}

// The pointwise convolution a linear layer is: rows of x are pixels.
Conv2dShape linear_shape(const Tensor& x_or_dx, const Tensor& w, std::string_view op) {
  if (x_or_dx.dim() != 2 || w.dim() != 2) {
    fail(std::string(op) + ": expected 2-D tensors, got " + x_or_dx.describe() + " and w " +
         w.describe());
  }
  Conv2dShape shape;
  shape.batch = x_or_dx.size(0);
  shape.in_channels = w.size(1);
  shape.out_channels = w.size(0);
  return shape;
}

Tensor as_image(const Tensor& rows, int64_t channels) {
  return rows.reshape({rows.size(0), 1, 1, channels});
}

}  // namespace

void conv2d_forward(const Conv2dShape& shape, const Tensor& x, const Tensor& w, const Tensor* bias,
                    Tensor& y, Stream& stream) {
  constexpr std::string_view op = "conv2d_forward";
  shape.validate();
  ops::require_defined(op, "x", x);
  const DType dtype = x.dtype();
  const Device device = x.device();
  require_tensor(op, "x", x, shape.input_shape(), dtype, device, shape);
  require_tensor(op, "w", w, shape.filter_shape(), dtype, device, shape);
  require_tensor(op, "y", y, shape.output_shape(), dtype, device, shape);
  if (bias != nullptr)
    require_tensor(op, "bias", *bias, {shape.out_channels}, DType::f32, device, shape);
  ops::require_on_stream(op, "x", x, stream);
  if (device.is_cpu()) {
    cpu::conv2d_forward(shape, dtype, x.raw_data(), w.raw_data(), bias_pointer(bias), y.raw_data());
  } else {
#if ENGINE_HAVE_CUDA
    cuda::conv2d_forward(shape, dtype, x.raw_data(), w.raw_data(), bias_pointer(bias), y.raw_data(),
                         stream.native());
#endif
  }
}

void conv2d_backward_data(const Conv2dShape& shape, const Tensor& dy, const Tensor& w, Tensor& dx,
                          Stream& stream) {
  constexpr std::string_view op = "conv2d_backward_data";
  shape.validate();
  ops::require_defined(op, "dy", dy);
  const DType dtype = dy.dtype();
  const Device device = dy.device();
  require_tensor(op, "dy", dy, shape.output_shape(), dtype, device, shape);
  require_tensor(op, "w", w, shape.filter_shape(), dtype, device, shape);
  require_tensor(op, "dx", dx, shape.input_shape(), dtype, device, shape);
  ops::require_on_stream(op, "dy", dy, stream);
  if (device.is_cpu()) {
    cpu::conv2d_backward_data(shape, dtype, dy.raw_data(), w.raw_data(), dx.raw_data());
  } else {
#if ENGINE_HAVE_CUDA
    cuda::conv2d_backward_data(shape, dtype, dy.raw_data(), w.raw_data(), dx.raw_data(),
                               stream.native());
#endif
  }
}

void conv2d_backward_filter(const Conv2dShape& shape, const Tensor& x, const Tensor& dy, Tensor& dw,
                            Tensor* dbias, bool accumulate, Stream& stream) {
  constexpr std::string_view op = "conv2d_backward_filter";
  shape.validate();
  ops::require_defined(op, "x", x);
  ops::require_defined(op, "dw", dw);
  const DType dtype = x.dtype();
  const Device device = x.device();
  require_tensor(op, "x", x, shape.input_shape(), dtype, device, shape);
  require_tensor(op, "dy", dy, shape.output_shape(), dtype, device, shape);
  require_grad_dtype(op, dw, dtype);
  require_tensor(op, "dw", dw, shape.filter_shape(), dw.dtype(), device, shape);
  if (dbias != nullptr)
    require_tensor(op, "dbias", *dbias, {shape.out_channels}, DType::f32, device, shape);
  ops::require_on_stream(op, "x", x, stream);
  if (device.is_cpu()) {
    cpu::conv2d_backward_filter(shape, dtype, x.raw_data(), dy.raw_data(), dw.dtype(),
                                dw.raw_data(), bias_pointer(dbias), accumulate);
  } else {
#if ENGINE_HAVE_CUDA
    // Split-K partials; from the caching allocator, so no cudaMalloc after the first step.
    Tensor workspace = Tensor::empty(
        {static_cast<int64_t>(cuda::conv2d_backward_filter_workspace_bytes(shape) / sizeof(float))},
        DType::f32, device);
    cuda::conv2d_backward_filter(shape, dtype, x.raw_data(), dy.raw_data(), dw.dtype(),
                                 dw.raw_data(), bias_pointer(dbias), accumulate,
                                 workspace.raw_data(), stream.native());
#endif
  }
}

void linear_forward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                    Stream& stream) {
  const Conv2dShape shape = linear_shape(x, w, "linear_forward");
  Tensor y_image = y.reshape({y.numel() / shape.out_channels, 1, 1, shape.out_channels});
  conv2d_forward(shape, as_image(x, shape.in_channels), w.reshape(shape.filter_shape()), bias,
                 y_image, stream);
}

void linear_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, Stream& stream) {
  const Conv2dShape shape = linear_shape(dx, w, "linear_backward_data");
  Tensor dx_image = as_image(dx, shape.in_channels);
  conv2d_backward_data(shape, as_image(dy, shape.out_channels), w.reshape(shape.filter_shape()),
                       dx_image, stream);
}

void linear_backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* dbias,
                            bool accumulate, Stream& stream) {
  const Conv2dShape shape = linear_shape(x, dw, "linear_backward_weight");
  Tensor dw_filter = dw.reshape(shape.filter_shape());
  conv2d_backward_filter(shape, as_image(x, shape.in_channels), as_image(dy, shape.out_channels),
                         dw_filter, dbias, accumulate, stream);
}

}  // namespace engine
