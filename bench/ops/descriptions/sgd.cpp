// resnet_train's SGD step (momentum 0.9, weight decay 1e-4; --nesterov optional) on the f32
// master weights: over the whole flat parameter buffer (too large for the sim device), and
// over the stem's filters, the view of it that one layer reads, with and without Nesterov.
#include "bench/ops/case_kit.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

OpCase sgd_case(const std::string& name, const Shape& shape, bool nesterov, bool bench) {
  const Operand params(shape, DType::f32, 81);
  const Operand grads(shape, DType::f32, 82, 0, 1e-2);
  const SgdOptions options{
      .lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = nesterov};
  OpCase c;
  c.op = OpId::sgd;
  c.name = name;
  c.dtype = DType::f32;
  c.tolerance = 1e-6;
  c.why = "fp32 multiply-adds that nvcc may fuse (one rounding fewer) where the CPU does not";
  c.elements = shape_numel(shape);
  c.bench = bench;
  c.dims = shape;
  // One step reads params, grads and the momentum buffer, and writes params and the buffer.
  c.bytes = bytes_of(5.0 * shape_numel(shape), DType::f32);
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Held p = hold(params.on(stream, inputs));
    const Held g = hold(grads.on(stream, inputs));
    const Held buffer = hold(Tensor::zeros(shape, DType::f32, stream.device(), stream));
    // The first step fills the momentum buffer (PyTorch's "buf is None"); the call is a
    // steady step after it, which reads the buffer too.
    sgd_step(options,
             {.params = *p,
              .grads = *g,
              .momentum_buffer = *buffer,
              .buffer_state = MomentumBuffer::empty},
             stream);
    return Prepared{[=, &stream] {
                      sgd_step(options,
                               {.params = *p,
                                .grads = *g,
                                .momentum_buffer = *buffer,
                                .buffer_state = MomentumBuffer::filled},
                               stream);
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"params", host_values(*p, stream)},
                                                 {"momentum_buffer", host_values(*buffer, stream)}};
                    }};
  };
  return c;
}

std::vector<OpCase> sgd_cases(const ModelShapes& model, DType dtype) {
  if (dtype != DType::f32) return {};  // master weights are f32
  std::vector<OpCase> cases{sgd_case(
      model.arch + " sgd step " + shape_str({model.parameters}) + " (momentum 0.9, wd 1e-4)",
      {model.parameters}, false, true)};
  const Shape filters = model.conv_layers.front().shape.filter_shape();
  for (bool nesterov : {false, true}) {
    cases.push_back(sgd_case(model.arch + " sgd step over conv1.weight " + shape_str(filters) +
                                 (nesterov ? " (nesterov)" : ""),
                             filters, nesterov, false));
  }
  return cases;
}

}  // namespace

// One torch.optim.SGD step over a flat tensor, foreach=False: over one tensor the foreach path
// measured the same (17.2 vs 17.3 ms for 11.7M floats on 2 threads), and 1.13 has no fused SGD.
const OpDescription& describe_sgd() {
  static const OpDescription d{.id = OpId::sgd, .cases = sgd_cases, .torch = R"(
def make(dims):
    param = torch.nn.Parameter(torch.full((dims[0],), 0.5))
    param.grad = torch.full((dims[0],), 1e-3)
    optimizer = torch.optim.SGD([param], lr=0.1, momentum=0.9, weight_decay=1e-4,
                                nesterov=False, foreach=False)
    optimizer.step()  # creates the momentum buffer, as our first step fills it
    return optimizer.step
)"};
  return d;
}

}  // namespace engine::op_registry
