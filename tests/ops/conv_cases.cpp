// The op harness's convolution cases: every distinct layer of the network, three passes each,
// and its filters' cast.
#include "case_helpers.h"

#include <cmath>

#include "conv_reference.h"
#include "kernels/ops.h"

namespace engine::ops_harness {

namespace {

// A case's operand on the stream's device: for the CPU reference of a tf32 case, rounded to
// tf32 as the tensor cores round it.
Tensor operand(const Tensor& host, Stream& stream, Fp32Math math) {
  if (math != Fp32Math::tf32 || !stream.device().is_cpu()) return on_device(host, stream);
  std::vector<float> values = host.to_floats(stream);
  for (float& v : values)
    v = testing::round_to_tf32(v);
  return Tensor::from_floats(host.shape(), values);
}

}  // namespace

void add_conv_cases(std::vector<OpCase>& cases, const bench::ConvLayer& layer, DType dtype,
                    Fp32Math math) {
  const Conv2dShape shape = layer.shape;
  const bool tf32 = math == Fp32Math::tf32;
  const double weight_std = 1.0 / std::sqrt(static_cast<double>(shape.gemm_k()));
  // Shared host operands: x, w (scaled so outputs are O(1)) and a gradient at the output.
  const auto x = HostTensor(shape.input_shape(), dtype, 11);
  const auto w = HostTensor(shape.filter_shape(), dtype, 12, 0, weight_std);
  const auto dy = HostTensor(shape.output_shape(), dtype, 13);
  const std::string name = layer.name + " " + shape_str(shape.input_shape());
  const double tolerance = dtype == DType::bf16 ? kBf16 : tf32 ? kTf32 : kGemmF32;
  const std::string why = dtype == DType::bf16 ? kBf16Why : tf32 ? kTf32Why : kGemmF32Why;
  const int64_t elements =
      std::max(shape_numel(shape.input_shape()), shape_numel(shape.output_shape()));

  // The forward, without a bias (torchvision's convolutions have none) or with one (nn::Conv2d
  // takes one): a forward with a bias never splits K, so that is the unsplit path's epilogue on
  // the layers whose plain forward splits. The workspace is the layers' (undefined where no
  // split pays, which the op takes as none).
  const auto bias = HostTensor({shape.out_channels}, DType::f32, 14);
  auto forward_case = [&](bool with_bias) {
    OpCase op{"conv2d_forward",
              with_bias ? name + " + bias" : name,
              dtype,
              tolerance,
              why,
              elements,
              nullptr,
              nullptr,
              math};
    op.prepare = [=](Stream& stream) {
      auto dx = std::make_shared<Tensor>(operand(*x, stream, math));
      auto dw = std::make_shared<Tensor>(operand(*w, stream, math));
      auto b = std::make_shared<Tensor>(with_bias ? on_device(*bias, stream) : Tensor());
      auto y =
          std::make_shared<Tensor>(Tensor::empty(shape.output_shape(), dtype, stream.device()));
      auto scratch = std::make_shared<Tensor>(
          workspace(conv2d_forward_workspace_numel(shape, stream.device()), stream));
      return Prepared{[=, &stream] { conv2d_forward(shape, *dx, *dw, *b, *y, *scratch, stream); },
                      [=, &stream] {
                        return std::vector<Output>{{"y", host_values(*y, stream)}};
                      }};
    };
    return op;
  };
  OpCase forward = forward_case(false);
  cases.push_back(forward_case(true));
  if (dtype == DType::f32 && !tf32) {
    forward.differentiables = [=] {
      Stream host;
      const std::vector<float> probe = dy->to_floats(host);
      auto forward_loss = [=](Stream& stream, const Tensor& input, const Tensor& filters) {
        Tensor y = Tensor::empty(shape.output_shape(), dtype, stream.device());
        conv2d_forward(shape, on_device(input, stream), on_device(filters, stream), Tensor(), y,
                       stream);
        return probed(y, probe, stream);
      };
      return std::vector<Differentiable>{
          {"x", x->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return forward_loss(stream, Tensor::from_floats(shape.input_shape(), point), *w);
           },
           [=](Stream& stream) {
             Tensor dx = Tensor::empty(shape.input_shape(), dtype, stream.device());
             conv2d_backward_data(shape, on_device(*dy, stream), on_device(*w, stream), dx, stream);
             return dx.to_floats(stream);
           }},
          {"w", w->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return forward_loss(stream, *x, Tensor::from_floats(shape.filter_shape(), point));
           },
           [=](Stream& stream) {
             Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32, stream.device());
             Tensor none;
             Tensor scratch =
                 workspace(conv2d_backward_filter_workspace_numel(shape, stream.device()), stream);
             conv2d_backward_filter(shape, on_device(*x, stream), on_device(*dy, stream), dw, none,
                                    false, scratch, stream);
             return dw.to_floats(stream);
           }}};
    };
  }
  cases.push_back(forward);

  OpCase data{"conv2d_backward_data", name, dtype, tolerance, why, elements, nullptr, nullptr};
  data.prepare = [=](Stream& stream) {
    auto grad = std::make_shared<Tensor>(operand(*dy, stream, math));
    auto dw = std::make_shared<Tensor>(operand(*w, stream, math));
    auto dx = std::make_shared<Tensor>(Tensor::empty(shape.input_shape(), dtype, stream.device()));
    auto scratch = std::make_shared<Tensor>(
        workspace(conv2d_backward_data_workspace_numel(shape, stream.device()), stream));
    return Prepared{
        [=, &stream] { conv2d_backward_data(shape, *grad, *dw, *dx, *scratch, stream); },
        [=, &stream] {
          return std::vector<Output>{{"dx", host_values(*dx, stream)}};
        }};
  };
  data.fp32_math = math;
  cases.push_back(data);

  // The filter gradient is fp32 (the master weights' gradient) for both dtypes: its
  // tolerance is the fp32 one, over sums of M = batch * out_h * out_w products.
  OpCase filter{"conv2d_backward_filter",
                name,
                dtype,
                tf32 ? kTf32 : kGemmF32,
                tf32 ? kTf32Why : kGemmF32Why,
                elements,
                nullptr,
                nullptr,
                math};
  filter.prepare = [=](Stream& stream) {
    auto input = std::make_shared<Tensor>(operand(*x, stream, math));
    auto grad = std::make_shared<Tensor>(operand(*dy, stream, math));
    auto dw =
        std::make_shared<Tensor>(Tensor::empty(shape.filter_shape(), DType::f32, stream.device()));
    auto scratch = std::make_shared<Tensor>(
        workspace(conv2d_backward_filter_workspace_numel(shape, stream.device()), stream));
    return Prepared{[=, &stream] {
                      Tensor none;
                      conv2d_backward_filter(shape, *input, *grad, *dw, none, false, *scratch,
                                             stream);
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"dw", host_values(*dw, stream)}};
                    }};
  };
  cases.push_back(filter);
}

// The bf16 step's casts of a layer's filters: f32 master -> bf16 compute weights (dtype
// bf16), and back (dtype f32).
void add_cast_case(std::vector<OpCase>& cases, const bench::ConvLayer& layer, DType dtype) {
  const Shape shape = layer.shape.filter_shape();
  const DType from = dtype == DType::bf16 ? DType::f32 : DType::bf16;
  const auto src = HostTensor(shape, from, 91);
  OpCase op{"cast",
            layer.name + " filters " + shape_str(shape) + " from " + dtype_suffix(from),
            dtype,
            kExact,
            "one conversion per element, rounding to nearest even on both sides",
            shape_numel(shape),
            nullptr,
            nullptr};
  op.prepare = [=](Stream& stream) {
    auto in = std::make_shared<Tensor>(on_device(*src, stream));
    auto out = std::make_shared<Tensor>(Tensor::empty(shape, dtype, stream.device()));
    return Prepared{[=, &stream] { cast(*in, *out, stream); },
                    [=, &stream] {
                      return std::vector<Output>{{"out", host_values(*out, stream)}};
                    }};
  };
  cases.push_back(op);
}

}  // namespace engine::ops_harness
