#include "bench/ops/descriptions/elementwise_kit.h"

#include <string>

#include "bench/ops/case_kit.h"
#include "kernels/ops.h"

namespace engine::op_registry {

namespace {

// offset > 0: every tensor is a view that many elements into a buffer.
OpCase elementwise_case(const ElementwiseOp& op, const std::string& name, const Shape& shape,
                        DType dtype, int64_t offset) {
  const Operand a(shape, dtype, 31);
  const Operand b(shape, dtype, 32);
  auto placed = [=](Stream& stream) {
    if (offset == 0) return Tensor::empty(shape, dtype, stream.device());
    return Tensor::empty({shape_numel(shape) + offset}, dtype, stream.device()).view(offset, shape);
  };
  auto placed_copy = [=](const Operand& operand, Stream& stream, Inputs inputs) {
    Tensor t = placed(stream);
    copy(operand.on(stream, inputs), t, stream);
    return t;
  };
  OpCase c;
  c.op = op.id;
  c.name = offset == 0 ? name : name + " (views " + std::to_string(offset) + " element in)";
  c.dtype = dtype;
  c.tolerance = kExact;
  c.why = kExactWhy;
  c.elements = shape_numel(shape) + offset;
  c.bench = op.bench && offset == 0;
  c.dims = shape;
  c.bytes = bytes_of(static_cast<double>(op.tensors_moved) * shape_numel(shape), dtype);
  const auto run = op.run;
  const bool relu_output = op.a_is_relu_output;
  c.prepare = [=](Stream& stream, Inputs inputs) {
    const Held in = hold(placed_copy(a, stream, inputs));
    // A ReLU's output, with its exact zeros (where a gradient must stop), rather than normal
    // values that are never zero.
    if (relu_output) relu_forward(*in, *in, stream);
    const Held other = hold(placed_copy(b, stream, inputs));
    const Held out = hold(placed(stream));
    return Prepared{[=, &stream] { run(*in, *other, *out, stream); },
                    [=, &stream] {
                      return std::vector<Output>{{"out", host_values(*out, stream)}};
                    }};
  };
  return c;
}

}  // namespace

std::vector<OpCase> elementwise_cases(const ElementwiseOp& op, const ModelShapes& model,
                                      DType dtype) {
  if (dtype != DType::f32 && dtype != DType::bf16) return {};
  std::vector<OpCase> cases;
  const std::string name_of_op(op_name(op.id));
  for (const Activation& a : model.activations) {
    const std::string name = model.prefix(a) + " " + name_of_op;
    cases.push_back(elementwise_case(op, name, a.nhwc, dtype, 0));
    if (op.views) cases.push_back(elementwise_case(op, name, a.nhwc, dtype, 1));
  }
  return cases;
}

}  // namespace engine::op_registry
