// ReLU's forward on every activation.
#include "bench/ops/descriptions/elementwise_kit.h"
#include "kernels/ops.h"

namespace engine::op_registry {

const OpDescription& describe_relu() {
  static const OpDescription d{.id = OpId::relu,
                               .cases =
                                   [](const ModelShapes& model, DType dtype) {
                                     return elementwise_cases(
                                         {.id = OpId::relu,
                                          .run = [](const Tensor& x, const Tensor&, Tensor& y,
                                                    Stream& stream) { relu_forward(x, y, stream); },
                                          .tensors_moved = 2},
                                         model, dtype);
                                   },
                               .torch = R"(
def make(dims):
    n, h, w, c = dims
    x = torch.randn(n, c, h, w)
    return lambda: torch.relu(x)
)",
                               .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

}  // namespace engine::op_registry
