// The pools: the stem's 3x3/2 max-pool (forward and backward) on the stem's output, and the
// head's global average pool on the last activation.
#include "bench/ops/case_kit.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

bool pooled_dtype(DType dtype) {
  return dtype == DType::f32 || dtype == DType::bf16;
}

std::vector<OpCase> maxpool_cases(const ModelShapes& model, DType dtype, bool backward) {
  if (!pooled_dtype(dtype)) return {};
  const Activation& stem = model.activations.front();
  const Shape shape = stem.nhwc;
  const MaxPool2dParams pool;
  const Shape pooled = {shape[0], pool.output_size(shape[1]), pool.output_size(shape[2]), shape[3]};
  const Operand x(shape, dtype, 41);
  const Operand dy(pooled, dtype, 42);
  OpCase c;
  c.op = backward ? OpId::maxpool_backward : OpId::maxpool;
  c.name = model.prefix(stem) + (backward ? " maxpool_backward" : " maxpool");
  c.dtype = dtype;
  c.tolerance = kExact;
  c.why =
      "a maximum is exact, and the backward sums each input's gradients in the same row-major "
      "order on both sides";
  c.elements = shape_numel(shape);
  c.dims = shape;
  // Forward: reads x, writes y and its argmax (a byte an element); backward: reads dy and the
  // argmax, writes dx.
  const double outputs = static_cast<double>(shape_numel(pooled));
  c.bytes =
      bytes_of(static_cast<double>(shape_numel(shape)), dtype) + bytes_of(outputs, dtype) + outputs;
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Device device = stream.device();
    const Held in = hold(x.on(stream, inputs));
    const Held y = hold(Tensor::empty(pooled, dtype, device));
    const Held argmax = hold(Tensor::empty(pooled, DType::u8, device));
    const Held grad = hold(dy.on(stream, inputs));
    const Held dx = hold(Tensor::empty(shape, dtype, device));
    if (backward)
      maxpool2d_forward(pool, {.x = *in, .y = *y, .argmax = *argmax},
                        stream);  // the argmax it gathers by
    return Prepared{[=, &stream] {
                      if (backward) {
                        maxpool2d_backward(pool, {.dy = *grad, .argmax = *argmax, .dx = *dx},
                                           stream);
                      } else {
                        maxpool2d_forward(pool, {.x = *in, .y = *y, .argmax = *argmax}, stream);
                      }
                    },
                    [=, &stream] {
                      if (backward) return std::vector<Output>{{"dx", host_values(*dx, stream)}};
                      return std::vector<Output>{{"y", host_values(*y, stream)},
                                                 {"argmax", host_values(*argmax, stream)}};
                    }};
  };
  return {c};
}

std::vector<OpCase> avgpool_cases(const ModelShapes& model, DType dtype, bool backward) {
  if (!pooled_dtype(dtype)) return {};
  const Activation& last = model.activations.back();
  const Shape shape = last.nhwc;
  const Shape pooled = {shape[0], shape[3]};
  const Operand x(shape, dtype, 51);
  const Operand dy(pooled, dtype, 52);
  OpCase c;
  c.op = backward ? OpId::avgpool_backward : OpId::avgpool;
  c.name = model.prefix(last) + (backward ? " avgpool_backward" : " avgpool");
  c.dtype = dtype;
  c.tolerance = dtype == DType::bf16 ? kBf16 : 1e-6;
  c.why = dtype == DType::bf16
              ? kBf16Why
              : "an fp32 mean over H * W (at most 49 values here) in another order";
  c.elements = shape_numel(shape);
  c.dims = shape;
  c.bytes = bytes_of(static_cast<double>(shape_numel(shape) + shape_numel(pooled)), dtype);
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Held in = hold(backward ? dy.on(stream, inputs) : x.on(stream, inputs));
    const Held out = hold(Tensor::empty(backward ? shape : pooled, dtype, stream.device()));
    return Prepared{[=, &stream] {
                      if (backward) {
                        global_avgpool_backward(*in, *out, stream);
                      } else {
                        global_avgpool_forward(*in, *out, stream);
                      }
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"out", host_values(*out, stream)}};
                    }};
  };
  if (dtype == DType::f32 && !backward) {
    c.differentiables = [=] {
      Stream host;
      const std::vector<float> probe = dy->to_floats(host);
      return std::vector<Differentiable>{
          {"x", x->to_floats(host),
           [=](Stream& stream, const std::vector<float>& point) {
             Tensor y = Tensor::empty(pooled, dtype, stream.device());
             global_avgpool_forward(on_device(Tensor::from_floats(shape, point), stream), y,
                                    stream);
             return probed(y, probe, stream);
           },
           [=](Stream& stream) {
             Tensor dx = Tensor::empty(shape, dtype, stream.device());
             global_avgpool_backward(on_device(*dy, stream), dx, stream);
             return dx.to_floats(stream);
           }}};
    };
  }
  return {c};
}

}  // namespace

const OpDescription& describe_maxpool() {
  static const OpDescription d{
      .id = OpId::maxpool,
      .cases = [](const ModelShapes& model,
                  DType dtype) { return maxpool_cases(model, dtype, false); },
      .torch = R"(
def make(dims):
    n, h, w, c = dims
    x = torch.randn(n, c, h, w)
    return lambda: F.max_pool2d(x, 3, 2, 1)
)",
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

// aten's max_pool2d_with_indices_backward, what autograd runs, into a preallocated output.
const OpDescription& describe_maxpool_backward() {
  static const OpDescription d{
      .id = OpId::maxpool_backward,
      .cases = [](const ModelShapes& model,
                  DType dtype) { return maxpool_cases(model, dtype, true); },
      .torch = R"(
def make(dims):
    n, h, w, c = dims
    x = torch.randn(n, c, h, w)
    y, indices = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    dy, out = torch.randn_like(y), torch.empty_like(x)
    return lambda: torch.ops.aten.max_pool2d_with_indices_backward.grad_input(
        dy, x, [3, 3], [2, 2], [1, 1], [1, 1], False, indices, grad_input=out)
)",
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

const OpDescription& describe_avgpool() {
  static const OpDescription d{
      .id = OpId::avgpool,
      .cases = [](const ModelShapes& model,
                  DType dtype) { return avgpool_cases(model, dtype, false); },
      .torch = R"(
def make(dims):
    n, h, w, c = dims
    x = torch.randn(n, c, h, w)
    return lambda: F.adaptive_avg_pool2d(x, 1)
)",
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

const OpDescription& describe_avgpool_backward() {
  static const OpDescription d{
      .id = OpId::avgpool_backward,
      .cases = [](const ModelShapes& model,
                  DType dtype) { return avgpool_cases(model, dtype, true); },
      .torch = R"(
def make(dims):
    n, h, w, c = dims
    x, dy = torch.randn(n, c, h, w), torch.randn(n, c, 1, 1)
    return lambda: torch.ops.aten._adaptive_avg_pool2d_backward(dy, x)
)",
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

}  // namespace engine::op_registry
