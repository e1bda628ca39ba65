// The convolutions: every distinct layer of the network, its three passes (f32 exact and
// tf32, and bf16), and the bf16 step's casts of its filters. The harness runs them all;
// bench_kernels times each layer's passes without a bias, in f32 (exact) and bf16, against
// PyTorch on the CPU and cuDNN on a GPU, and their total over a step.
#include <cmath>
#include <string>

#include "bench/ops/case_kit.h"
#include "bench/ops/gpu_baselines.h"
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

// A layer's bench row, "resnet50 layer1.0.conv1 1x1 64->64 fwd bf16": its shape as the
// PyTorch and cuDNN baselines read it (batch in_h in_w in_channels out_channels kernel_h
// kernel_w stride pad; ResNet's strides and pads are square).
void set_bench_row(OpCase& c, const std::string& arch, const bench::ConvLayer& layer,
                   const char* pass) {
  const Conv2dShape& s = layer.shape;
  c.bench = true;
  c.dims = {s.batch,    s.in_h,     s.in_w,     s.in_channels, s.out_channels,
            s.kernel_h, s.kernel_w, s.stride_h, s.pad_h};
  c.row_subject = arch + " " + layer.name;
  c.row_pass = pass;
  c.per_step = layer.count;
}

void add_layer_cases(std::vector<OpCase>& cases, const std::string& arch,
                     const bench::ConvLayer& layer, DType dtype, Fp32Math math, Pass pass) {
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
  // The bench times the layer without a bias (torchvision's have none), in exact fp32 or bf16.
  const bool bench = !tf32;
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
        const Held counters = hold(split_counters(shape, ConvPass::forward, stream));
        return Prepared{[=, &stream] {
                          conv2d_forward(shape,
                                         {.x = *x,
                                          .w = *w,
                                          .bias = *b,
                                          .y = *y,
                                          .workspace = *scratch,
                                          .split_counters = *counters},
                                         stream);
                        },
                        [=, &stream] {
                          return std::vector<Output>{{"y", host_values(*y, stream)}};
                        }};
      };
      if (!with_bias && dtype == DType::f32 && !tf32)
        f.differentiables = [=] { return conv_differentiables(shape, dtype, o); };
      if (!with_bias && bench) set_bench_row(f, arch, layer, "fwd");
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
      const Held counters = hold(split_counters(shape, ConvPass::backward_data, stream));
      return Prepared{
          [=, &stream] {
            conv2d_backward_data(
                shape,
                {.dy = *dy, .w = *w, .dx = *dx, .workspace = *scratch, .split_counters = *counters},
                stream);
          },
          [=, &stream] {
            return std::vector<Output>{{"dx", host_values(*dx, stream)}};
          }};
    };
    if (bench) set_bench_row(c, arch, layer, "bwd_data");
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
    const Held counters = hold(split_counters(shape, ConvPass::backward_filter, stream));
    return Prepared{[=, &stream] {
                      Tensor none;
                      conv2d_backward_filter(shape,
                                             {.x = *x,
                                              .dy = *dy,
                                              .dw = *dw,
                                              .dbias = none,
                                              .workspace = *scratch,
                                              .split_counters = *counters,
                                              .write = GradWrite::overwrite},
                                             stream);
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"dw", host_values(*dw, stream)}};
                    }};
  };
  if (bench) set_bench_row(c, arch, layer, "bwd_filter");
  cases.push_back(c);
}

// Every distinct layer: f32 exact then tf32, or bf16.
std::vector<OpCase> conv_cases(const ModelShapes& model, DType dtype, Pass pass) {
  std::vector<OpCase> cases;
  if (dtype != DType::f32 && dtype != DType::bf16) return cases;
  for (const bench::ConvLayer& layer : model.conv_layers) {
    add_layer_cases(cases, model.arch, layer, dtype, Fp32Math::exact, pass);
    if (dtype == DType::f32) add_layer_cases(cases, model.arch, layer, dtype, Fp32Math::tf32, pass);
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

// The three passes' rows add up to the network's per step (each layer times its count).
constexpr const char* kStepTotal = "all conv layers fwd+bwd";

// PyTorch's passes on random operands (dims as set_bench_row lays them out): f32 in its
// default NCHW layout; bf16 as torch.autocast("cpu", dtype=torch.bfloat16) hands them to the
// convolution (its filter gradient is bf16, cast to fp32 afterwards for the master weight; ours
// is written in fp32 directly), in NCHW and channels_last, the faster kept.
constexpr const char* kTorchOperands = R"(
def operands(dims):
    n, h, w, c, k, r, s, stride, pad = dims
    layouts = [torch.contiguous_format]
    if dtype == torch.bfloat16:
        layouts.append(torch.channels_last)
    out_h, out_w = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
    for layout in layouts:
        x = torch.randn(n, c, h, w).to(dtype).contiguous(memory_format=layout)
        weight = torch.randn(k, c, r, s).to(dtype).contiguous(memory_format=layout)
        dy = torch.randn(n, k, out_h, out_w).to(dtype).contiguous(memory_format=layout)
        yield x, weight, dy, stride, pad


def backward(dims, mask):
    return [lambda x=x, weight=weight, dy=dy, stride=stride, pad=pad:
            torch.ops.aten.convolution_backward(dy, x, weight, None, [stride, stride], [pad, pad],
                                                [1, 1], False, [0, 0], 1, mask)
            for x, weight, dy, stride, pad in operands(dims)]
)";

// A pass's description: its cases, and its PyTorch code (the operands, then `make`).
template <Pass pass>
const OpDescription& describe_pass(OpId id, const char* make, const GpuBaseline& gpu_baseline) {
  static const std::string torch = std::string(kTorchOperands) + make;
  static const OpDescription d{
      .id = id,
      .cases = [](const ModelShapes& model, DType dtype) { return conv_cases(model, dtype, pass); },
      .torch = torch.c_str(),
      .gpu_baseline = gpu_baseline,
      .bench_dtypes = BenchDtypes::each,
      .step_total = kStepTotal};
  return d;
}

}  // namespace

const OpDescription& describe_conv2d_forward() {
  return describe_pass<Pass::forward>(OpId::conv2d_forward, R"(
def make(dims):
    return [lambda x=x, weight=weight, stride=stride, pad=pad:
            F.conv2d(x, weight, stride=stride, padding=pad)
            for x, weight, _, stride, pad in operands(dims)]
)",
                                      kCudnnConvForward);
}

const OpDescription& describe_conv2d_backward_data() {
  return describe_pass<Pass::backward_data>(OpId::conv2d_backward_data, R"(
def make(dims):
    return backward(dims, [True, False, False])
)",
                                            kCudnnConvBackwardData);
}

const OpDescription& describe_conv2d_backward_filter() {
  return describe_pass<Pass::backward_filter>(OpId::conv2d_backward_filter, R"(
def make(dims):
    return backward(dims, [False, True, False])
)",
                                              kCudnnConvBackwardFilter);
}

const OpDescription& describe_cast() {
  static const OpDescription d{.id = OpId::cast, .cases = cast_cases};
  return d;
}

}  // namespace engine::op_registry
