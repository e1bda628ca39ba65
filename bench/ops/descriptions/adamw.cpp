// The AdamW step (lr 1e-3, betas 0.9/0.999, weight decay 0.05: a ViT/ConvNeXt-style recipe)
// on the f32 master weights: over the whole flat parameter buffer, and over the stem's
// filters, the view of it that one layer reads.
#include <algorithm>

#include "bench/ops/case_kit.h"
#include "bench/ops/op_description.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

OpCase adamw_case(const std::string& name, const Shape& shape, bool bench) {
  const Operand params(shape, DType::f32, 91);
  const Operand grads(shape, DType::f32, 92, 0, 1e-2);
  const AdamWOptions options{.lr = 1e-3f, .weight_decay = 0.05f};
  OpCase c;
  c.op = OpId::adamw;
  c.name = name;
  c.dtype = DType::f32;
  c.tolerance = 1e-5;
  c.why = "fp32 multiply-adds that nvcc may fuse where the CPU does not, and sqrt/divide";
  c.elements = shape_numel(shape);
  c.bench = bench;
  c.dims = shape;
  // One step reads params, grads and both moments, and writes params and the moments.
  c.bytes = bytes_of(7.0 * shape_numel(shape), DType::f32);
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Held p = hold(params.on(stream, inputs));
    const Held g = hold(grads.on(stream, inputs));
    const Held m = hold(Tensor::zeros(shape, DType::f32, stream.device(), stream));
    const Held v = hold(Tensor::zeros(shape, DType::f32, stream.device(), stream));
    // A first step fills the moments, so the timed call is a steady step (step 2).
    adamw_step(options, {.params = *p, .grads = *g, .exp_avg = *m, .exp_avg_sq = *v, .step = 1},
               stream);
    return Prepared{[=, &stream] {
                      adamw_step(
                          options,
                          {.params = *p, .grads = *g, .exp_avg = *m, .exp_avg_sq = *v, .step = 2},
                          stream);
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"params", host_values(*p, stream)},
                                                 {"exp_avg", host_values(*m, stream)},
                                                 {"exp_avg_sq", host_values(*v, stream)}};
                    }};
  };
  return c;
}

std::vector<OpCase> adamw_cases(const ModelShapes& model, DType dtype) {
  if (dtype != DType::f32) return {};  // master weights are f32
  const Shape filters = model.conv_layers.front().shape.filter_shape();
  return {adamw_case(model.arch + " adamw step " + shape_str({model.parameters}) + " (wd 0.05)",
                     {model.parameters}, true),
          adamw_case(model.arch + " adamw step over conv1.weight " + shape_str(filters), filters,
                     false)};
}

}  // namespace

// One torch.optim.AdamW step over a flat tensor, foreach=False (1.13's default on the CPU).
const OpDescription& describe_adamw() {
  static const OpDescription d{.id = OpId::adamw, .cases = adamw_cases, .torch = R"(
def make(dims):
    param = torch.nn.Parameter(torch.full((dims[0],), 0.5))
    param.grad = torch.full((dims[0],), 1e-3)
    optimizer = torch.optim.AdamW([param], lr=1e-3, weight_decay=0.05, foreach=False)
    optimizer.step()  # creates the moments, as our first step fills them
    return optimizer.step
)"};
  return d;
}

}  // namespace engine::op_registry
