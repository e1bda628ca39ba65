// --clip-grad as the trainer runs it on the flat gradient: the squared global norm
// (sum_squares) then the scaling by min(1, max_norm / (norm + 1e-6)), which reads the norm on
// the device. max_norm 1 against gradients of norm about 50: the scaling applies.
#include "bench/ops/case_kit.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"
#include "nn/parameter_runs.h"

namespace engine::op_registry {

namespace {

OpCase clip_grad_case(const std::string& name, int64_t n, bool bench) {
  const Operand grads({n}, DType::f32, 95, 0, 1e-2);
  const int blocks = nn::sum_squares_blocks(n);  // the flat gradient is one segment
  OpCase c;
  c.op = OpId::clip_grad;
  c.name = name;
  c.dtype = DType::f32;
  c.tolerance = 1e-6;
  c.why = "the norm's double sums in another order round to a float one ulp apart at most";
  c.elements = n;
  c.bench = bench;
  c.dims = {n};
  // The norm reads the gradient; the scaling reads and writes it.
  c.bytes = bytes_of(3.0 * n, DType::f32);
  c.prepare = [=](Stream& stream, Inputs in) {
    const Held g = hold(grads.on(stream, in));
    const Held table = hold(
        on_device(Tensor::from_ints({1, kSegmentFields}, {0, static_cast<int32_t>(n), 0}), stream));
    const Held partials = hold(Tensor::zeros(
        {sum_squares_partials({.segments = 1, .blocks_per_segment = blocks, .inputs = 1})},
        DType::f64, stream.device(), stream));
    const Held sum = hold(Tensor::zeros({1}, DType::f64, stream.device(), stream));
    return Prepared{[=, &stream] {
                      sum_squares({.a = *g,
                                   .b = Tensor(),
                                   .segments = *table,
                                   .sums = *sum,
                                   .partials = *partials,
                                   .blocks_per_segment = blocks},
                                  stream);
                      clip_grad({.grads = *g, .sum_squares = *sum, .max_norm = 1.f}, stream);
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"grads", host_values(*g, stream)}};
                    }};
  };
  return c;
}

std::vector<OpCase> clip_grad_cases(const ModelShapes& model, DType dtype) {
  if (dtype != DType::f32) return {};  // gradients are reduced and clipped in f32
  const int64_t filters = shape_numel(model.conv_layers.front().shape.filter_shape());
  return {
      clip_grad_case(model.arch + " clip_grad " + shape_str({model.parameters}) + " (max_norm 1)",
                     model.parameters, true),
      clip_grad_case(model.arch + " clip_grad over conv1.weight's size " + shape_str({filters}),
                     filters, false)};
}

}  // namespace

// torch.nn.utils.clip_grad_norm_ on one flat parameter (1.13 has no foreach clipping).
const OpDescription& describe_clip_grad() {
  static const OpDescription d{.id = OpId::clip_grad, .cases = clip_grad_cases, .torch = R"(
def make(dims):
    param = torch.nn.Parameter(torch.zeros((dims[0],)))
    param.grad = torch.full((dims[0],), 1e-2)
    return lambda: torch.nn.utils.clip_grad_norm_([param], 1.0)
)"};
  return d;
}

}  // namespace engine::op_registry
