// Sums of squares per parameter tensor in double (two launches: blocks' partials, then their
// sum per tensor): over the flat gradient as one tensor (--clip-grad's global norm), and over
// the weights and gradients of every conv filter and BatchNorm vector at once (LARS).
#include "bench/ops/case_kit.h"
#include "bench/ops/op_description.h"
#include "bench/ops/parameter_segments.h"
#include "kernels/ops.h"
#include "nn/parameter_runs.h"

namespace engine::op_registry {

namespace {

OpCase sum_squares_case(const std::string& name, const std::vector<int32_t>& rows, bool two,
                        bool bench) {
  const int64_t n = rows[rows.size() - 2];
  const auto segments = static_cast<int64_t>(rows.size() / kSegmentFields);
  const Operand a({n}, DType::f32, 93);
  const Operand b({n}, DType::f32, 94, 0, 1e-2);
  const Tensor host_table = Tensor::from_ints({segments, kSegmentFields}, rows);
  const int blocks = nn::sum_squares_blocks(largest_segment(rows));
  const int inputs = two ? 2 : 1;
  OpCase c;
  c.op = OpId::sum_squares;
  c.name = name;
  c.dtype = DType::f32;
  c.tolerance = 1e-12;
  c.why = "double sums of the same squares in another order";
  c.elements = n;
  c.bench = bench;
  c.dims = {n};
  c.bytes = bytes_of(double(inputs) * n, DType::f32);
  c.prepare = [=](Stream& stream, Inputs in) {
    const Held da = hold(a.on(stream, in));
    const Held db = hold(two ? b.on(stream, in) : Tensor());
    const Held table = hold(on_device(host_table, stream));
    const Held partials = hold(
        Tensor::zeros({sum_squares_partials(
                          {.segments = segments, .blocks_per_segment = blocks, .inputs = inputs})},
                      DType::f64, stream.device(), stream));
    const Held sums = hold(Tensor::zeros({segments * inputs}, DType::f64, stream.device(), stream));
    return Prepared{[=, &stream] {
                      sum_squares({.a = *da,
                                   .b = *db,
                                   .segments = *table,
                                   .sums = *sums,
                                   .partials = *partials,
                                   .blocks_per_segment = blocks},
                                  stream);
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"sums", host_values(*sums, stream)}};
                    }};
  };
  return c;
}

std::vector<OpCase> sum_squares_cases(const ModelShapes& model, DType dtype) {
  if (dtype != DType::f32) return {};  // gradients and master weights are f32
  const auto n = static_cast<int32_t>(model.parameters);
  const std::vector<int32_t> per_tensor = parameter_segment_rows(model);
  return {
      sum_squares_case(model.arch + " sum_squares over the flat gradient " +
                           shape_str({model.parameters}) + " (clip-grad)",
                       {0, n, 0}, false, true),
      sum_squares_case(model.arch + " sum_squares of weights and gradients per tensor " +
                           std::to_string(per_tensor.size() / kSegmentFields) + " tensors (lars)",
                       per_tensor, true, false),
      sum_squares_case(model.arch + " sum_squares of weights and gradients per tensor over the "
                                    "first two conv layers (lars, sim-sized)",
                       parameter_segment_rows(model, 2), true, false)};
}

}  // namespace

// torch.nn.utils.clip_grad_norm_'s reduction: the 2-norm of one flat tensor.
const OpDescription& describe_sum_squares() {
  static const OpDescription d{.id = OpId::sum_squares, .cases = sum_squares_cases, .torch = R"(
def make(dims):
    grad = torch.full((dims[0],), 1e-3)
    return lambda: torch.linalg.vector_norm(grad, 2.0)
)"};
  return d;
}

}  // namespace engine::op_registry
