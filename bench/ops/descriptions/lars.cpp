// The LARS step as nn::Lars runs it (MLPerf ResNet-50's: eta 1e-3, weight decay 5e-5,
// momentum 0.9, BatchNorm vectors excluded): the weights' and gradients' sums of squares per
// tensor, then the update that reads them, over every conv filter and BatchNorm vector.
#include "bench/ops/case_kit.h"
#include "bench/ops/op_description.h"
#include "bench/ops/parameter_segments.h"
#include "kernels/ops.h"
#include "nn/parameter_runs.h"

namespace engine::op_registry {

namespace {

OpCase lars_case(const ModelShapes& model, const std::vector<int32_t>& rows,
                 const std::string& what, bool bench) {
  const int64_t n = rows[rows.size() - 2];
  const auto segments = static_cast<int64_t>(rows.size() / kSegmentFields);
  const int blocks = nn::sum_squares_blocks(largest_segment(rows));
  const Operand params({n}, DType::f32, 96);
  const Operand grads({n}, DType::f32, 97, 0, 1e-2);
  const LarsOptions options{.lr = 8.f, .momentum = 0.9f, .weight_decay = 5e-5f, .eta = 1e-3f};
  OpCase c;
  c.op = OpId::lars;
  c.name = model.arch + " lars step " + shape_str({n}) + " in " + std::to_string(segments) +
           " tensors" + what + " (eta 1e-3, wd 5e-5)";
  c.bench = bench;
  c.dtype = DType::f32;
  c.tolerance = 1e-6;
  c.why = "fp32 multiply-adds that nvcc may fuse, and the trust ratios' double sums' order";
  c.elements = n;
  c.dims = {n};
  // The norms read weights and gradients; the update reads them and the momentum, and writes
  // the weights and the momentum.
  c.bytes = bytes_of(7.0 * n, DType::f32);
  const Tensor host_table = Tensor::from_ints({segments, kSegmentFields}, rows);
  c.prepare = [=](Stream& stream, Inputs in) {
    const Held p = hold(params.on(stream, in));
    const Held g = hold(grads.on(stream, in));
    const Held buffer = hold(Tensor::zeros({n}, DType::f32, stream.device(), stream));
    const Held table = hold(on_device(host_table, stream));
    const Held partials = hold(Tensor::zeros(
        {sum_squares_partials({.segments = segments, .blocks_per_segment = blocks, .inputs = 2})},
        DType::f64, stream.device(), stream));
    const Held sums = hold(Tensor::zeros({segments, 2}, DType::f64, stream.device(), stream));
    return Prepared{[=, &stream] {
                      sum_squares({.a = *p,
                                   .b = *g,
                                   .segments = *table,
                                   .sums = *sums,
                                   .partials = *partials,
                                   .blocks_per_segment = blocks},
                                  stream);
                      lars_step(options,
                                {.params = *p,
                                 .grads = *g,
                                 .momentum_buffer = *buffer,
                                 .segments = *table,
                                 .sum_squares = *sums},
                                stream);
                    },
                    [=, &stream] {
                      return std::vector<Output>{{"params", host_values(*p, stream)},
                                                 {"momentum_buffer", host_values(*buffer, stream)}};
                    }};
  };
  return c;
}

std::vector<OpCase> lars_cases(const ModelShapes& model, DType dtype) {
  if (dtype != DType::f32) return {};  // master weights are f32
  return {
      lars_case(model, parameter_segment_rows(model), "", true),
      lars_case(model, parameter_segment_rows(model, 2), " of the first two conv layers", false)};
}

}  // namespace

// 1.13 has no LARS: its formula in torch ops over one flat tensor (one trust ratio), the
// same traffic as ours per element.
const OpDescription& describe_lars() {
  static const OpDescription d{.id = OpId::lars, .cases = lars_cases, .torch = R"(
def make(dims):
    p = torch.full((dims[0],), 0.5)
    g = torch.full((dims[0],), 1e-3)
    buf = torch.zeros((dims[0],))
    def step():
        w_norm = torch.linalg.vector_norm(p)
        g_norm = torch.linalg.vector_norm(g)
        trust = 1e-3 * w_norm / (g_norm + 5e-5 * w_norm)
        buf.mul_(0.9).add_(g.add(p, alpha=5e-5) * (8.0 * trust))
        p.sub_(buf)
    return step
)"};
  return d;
}

}  // namespace engine::op_registry
