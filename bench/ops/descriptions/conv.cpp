// The convolutions: every distinct layer of the network, its three passes (f32 exact and
// tf32, and bf16), and the bf16 step's casts of its filters. The harness runs them; their
// benchmark rows are bench_kernels' convolution section (against cuDNN and PyTorch per layer),
// not these cases.
#include <cmath>

#include "bench/ops/case_kit.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

enum class Pass { forward, backward_data, backward_filter };

// A case's operand on the stream's device: for the CPU reference of a tf32 case, rounded to
// tf32 as the tensor cores round it.
Tensor conv_operand(const Operand& operand, Stream& stream, Inputs inputs, Fp32Math math) {
  Tensor t = operand.on(stream, inputs);
  if (math != Fp32Math::tf32 || !stream.device().is_cpu()) return t;
  std::vector<float> values = t.to_floats(stream);
  for (float& v : values)
    v = round_to_tf32(v);
  return Tensor::from_floats(t.shape(), values);
}

// A layer's operands: x, w (scaled so outputs are O(1)), a gradient at the output, a bias.
struct ConvOperands {
  explicit ConvOperands(const Conv2dShape& shape, DType dtype)
      : x(shape.input_shape(), dtype, 11),
        w(shape.filter_shape(), dtype, 12, 0, 1.0 / std::sqrt(static_cast<double>(shape.gemm_k()))),
        dy(shape.output_shape(), dtype, 13),
        bias({shape.out_channels}, DType::f32, 14) {}
  Operand x, w, dy, bias;
};

// The finite-difference checks of the forward's x and w, through the input and filter
// gradients.
std::vector<Differentiable> conv_differentiables(const Conv2dShape& shape, DType dtype,
                                                 const ConvOperands& o) {
  Stream host;
  const std::vector<float> probe = o.dy->to_floats(host);
  auto forward_loss = [=](Stream& stream, const Tensor& input, const Tensor& filters) {
    Tensor y = Tensor::empty(shape.output_shape(), dtype, stream.device());
    conv2d_forward(shape,
                   {.x = on_device(input, stream),
                    .w = on_device(filters, stream),
                    .bias = Tensor(),
                    .y = y,
                    .workspace = {}},
                   stream);
    return probed(y, probe, stream);
  };
  return {{"x", o.x->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return forward_loss(stream, Tensor::from_floats(shape.input_shape(), point), *o.w);
           },
           [=](Stream& stream) {
             Tensor dx = Tensor::empty(shape.input_shape(), dtype, stream.device());
             conv2d_backward_data(shape,
                                  {.dy = on_device(*o.dy, stream),
                                   .w = on_device(*o.w, stream),
                                   .dx = dx,
                                   .workspace = {}},
                                  stream);
             return dx.to_floats(stream);
           }},
          {"w", o.w->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             return forward_loss(stream, *o.x, Tensor::from_floats(shape.filter_shape(), point));
           },
           [=](Stream& stream) {
             Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32, stream.device());
             Tensor none;
             Tensor scratch =
                 workspace(conv2d_backward_filter_workspace_numel(shape, stream.device()), stream);
             conv2d_backward_filter(shape,
                                    {.x = on_device(*o.x, stream),
                                     .dy = on_device(*o.dy, stream),
                                     .dw = dw,
                                     .dbias = none,
                                     .workspace = scratch,
                                     .write = GradWrite::overwrite},
                                    stream);
             return dw.to_floats(stream);
           }}};
}

void add_layer_cases(std::vector<OpCase>& cases, const bench::ConvLayer& layer, DType dtype,
                     Fp32Math math, Pass pass) {
  const Conv2dShape shape = layer.shape;
  const bool tf32 = math == Fp32Math::tf32;
  const ConvOperands o(shape, dtype);
  OpCase c;
  c.name = layer.name + " " + shape_str(shape.input_shape());
  c.dtype = dtype;
  c.tolerance = dtype == DType::bf16 ? kBf16 : tf32 ? kTf32 : kGemmF32;
  c.why = dtype == DType::bf16 ? kBf16Why : tf32 ? kTf32Why : kGemmF32Why;
  c.elements = std::max(shape_numel(shape.input_shape()), shape_numel(shape.output_shape()));
  c.fp32_math = math;
  c.bench = false;
  c.flops = 2.0 * static_cast<double>(shape.gemm_m()) * shape.out_channels * shape.gemm_k();
  if (pass == Pass::forward) {
    // Without a bias (torchvision's convolutions have none) and with one (nn::Conv2d takes
    // one): a forward with a bias never splits K, so that is the unsplit path's epilogue on
    // the layers whose plain forward splits. The workspace is the layers' (undefined where no
    // split pays, which the op takes as none).
    for (bool with_bias : {true, false}) {
      OpCase f = c;
      f.op = OpId::conv2d_forward;
      if (with_bias) f.name += " + bias";
      f.prepare = [=](Stream& stream, Inputs inputs) {
        const Held x = hold(conv_operand(o.x, stream, inputs, math));
        const Held w = hold(conv_operand(o.w, stream, inputs, math));
        const Held b = hold(with_bias ? o.bias.on(stream, inputs) : Tensor());
        const Held y = hold(Tensor::empty(shape.output_shape(), dtype, stream.device()));
        const Held scratch =
            hold(workspace(conv2d_forward_workspace_numel(shape, stream.device()), stream));
        return Prepared{[=, &stream] {
                          conv2d_forward(
                              shape, {.x = *x, .w = *w, .bias = *b, .y = *y, .workspace = *scratch},
                              stream);
                        },
                        [=, &stream] {
                          return std::vector<Output>{{"y", host_values(*y, stream)}};
                        }};
      };
      if (!with_bias && dtype == DType::f32 && !tf32)
        f.differentiables = [=] { return conv_differentiables(shape, dtype, o); };
      cases.push_back(f);
    }
    return;
  }
  if (pass == Pass::backward_data) {
    c.op = OpId::conv2d_backward_data;
    c.prepare = [=](Stream& stream, Inputs inputs) {
      const Held dy = hold(conv_operand(o.dy, stream, inputs, math));
      const Held w = hold(conv_operand(o.w, stream, inputs, math));
      const Held dx = hold(Tensor::empty(shape.input_shape(), dtype, stream.device()));
      const Held scratch =
          hold(workspace(conv2d_backward_data_workspace_numel(shape, stream.device()), stream));
      return Prepared{[=, &stream] {
                        conv2d_backward_data(
                            shape, {.dy = *dy, .w = *w, .dx = *dx, .workspace = *scratch}, stream);
                      },
                      [=, &stream] {
                        return std::vector<Output>{{"dx", host_values(*dx, stream)}};
                      }};
    };
    cases.push_back(c);
    return;
  }
  // The filter gradient is fp32 (the master weights' gradient) for both dtypes: its tolerance
  // is the fp32 one, over sums of M = batch * out_h * out_w products.
  c.op = OpId::conv2d_backward_filter;
  c.tolerance = tf32 ? kTf32 : kGemmF32;
  c.why = tf32 ? kTf32Why : kGemmF32Why;
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Held x = hold(conv_operand(o.x, stream, inputs, math));
    const Held dy = hold(conv_operand(o.dy, stream, inputs, math));
    const Held dw = hold(Tensor::empty(shape.filter_shape(), DType::f32, stream.device()));
    const Held scratch =
        hold(workspace(conv2d_backward_filter_workspace_numel(shape, stream.device()), stream));
    return Prepared{[=, &stream] {
                      Tensor none;
                      conv2d_backward_filter(shape,
                                             {.x = *x,
                                              .dy = *dy,
                                              .dw = *dw,
                                              .dbias = none,
                                              .workspace = *scratch,
                                              .write = GradWrite::overwrite},
                                             stream);
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"dw", host_values(*dw, stream)}};
                    }};
  };
  cases.push_back(c);
}

// Every distinct layer: f32 exact then tf32, or bf16.
std::vector<OpCase> conv_cases(const ModelShapes& model, DType dtype, Pass pass) {
  std::vector<OpCase> cases;
  if (dtype != DType::f32 && dtype != DType::bf16) return cases;
  for (const bench::ConvLayer& layer : model.conv_layers) {
    add_layer_cases(cases, layer, dtype, Fp32Math::exact, pass);
    if (dtype == DType::f32) add_layer_cases(cases, layer, dtype, Fp32Math::tf32, pass);
  }
  return cases;
}

// The bf16 step's casts of a layer's filters: f32 master -> bf16 compute weights (dtype bf16),
// and back (dtype f32).
std::vector<OpCase> cast_cases(const ModelShapes& model, DType dtype) {
  std::vector<OpCase> cases;
  if (dtype != DType::f32 && dtype != DType::bf16) return cases;
  const DType from = dtype == DType::bf16 ? DType::f32 : DType::bf16;
  for (const bench::ConvLayer& layer : model.conv_layers) {
    const Shape shape = layer.shape.filter_shape();
    const Operand src(shape, from, 91);
    OpCase c;
    c.op = OpId::cast;
    c.name = layer.name + " filters " + shape_str(shape) + " from " + std::string(dtype_name(from));
    c.dtype = dtype;
    c.tolerance = kExact;
    c.why = "one conversion per element, rounding to nearest even on both sides";
    c.elements = shape_numel(shape);
    c.bench = false;
    c.dims = shape;
    c.bytes = bytes_of(static_cast<double>(shape_numel(shape)), from) +
              bytes_of(static_cast<double>(shape_numel(shape)), dtype);
    c.prepare = [=](Stream& stream, Inputs inputs) {
      const Held in = hold(src.on(stream, inputs));
      const Held out = hold(Tensor::empty(shape, dtype, stream.device()));
      return Prepared{[=, &stream] { cast(*in, *out, stream); },
                      [=, &stream] {
                        return std::vector<Output>{{"out", host_values(*out, stream)}};
                      }};
    };
    cases.push_back(c);
  }
  return cases;
}

}  // namespace

const OpDescription& describe_conv2d_forward() {
  static const OpDescription d{.id = OpId::conv2d_forward,
                               .cases = [](const ModelShapes& model, DType dtype) {
                                 return conv_cases(model, dtype, Pass::forward);
                               }};
  return d;
}

const OpDescription& describe_conv2d_backward_data() {
  static const OpDescription d{.id = OpId::conv2d_backward_data,
                               .cases = [](const ModelShapes& model, DType dtype) {
                                 return conv_cases(model, dtype, Pass::backward_data);
                               }};
  return d;
}

const OpDescription& describe_conv2d_backward_filter() {
  static const OpDescription d{.id = OpId::conv2d_backward_filter,
                               .cases = [](const ModelShapes& model, DType dtype) {
                                 return conv_cases(model, dtype, Pass::backward_filter);
                               }};
  return d;
}

const OpDescription& describe_cast() {
  static const OpDescription d{.id = OpId::cast, .cases = cast_cases};
  return d;
}

}  // namespace engine::op_registry
