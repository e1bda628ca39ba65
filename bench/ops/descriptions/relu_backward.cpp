// ReLU's backward, dx = dy where y > 0, on every activation: it reads the forward's output y
// and the incoming gradient.
#include "bench/ops/descriptions/elementwise_kit.h"
#include "kernels/ops.h"

namespace engine::op_registry {

const OpDescription& describe_relu_backward() {
  static const OpDescription d{
      .id = OpId::relu_backward,
      .cases =
          [](const ModelShapes& model, DType dtype) {
            return elementwise_cases(
                {.id = OpId::relu_backward,
                 .run = [](const Tensor& y, const Tensor& dy, Tensor& dx,
                           Stream& stream) { relu_backward({.y = y, .dy = dy, .dx = dx}, stream); },
                 .tensors_moved = 3,
                 .a_is_relu_output = true,
                 .views = false},
                model, dtype);
          },
      // aten's threshold_backward, what autograd runs, into a preallocated output as ours.
      .torch = R"(
def make(dims):
    n, h, w, c = dims
    y, dy = torch.relu(torch.randn(n, c, h, w)), torch.randn(n, c, h, w)
    out = torch.empty_like(y)
    return lambda: torch.ops.aten.threshold_backward.grad_input(dy, y, 0.0, grad_input=out)
)",
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

}  // namespace engine::op_registry
