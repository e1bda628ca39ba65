// add+ReLU, a residual block's join, on every activation (the stem's too, though no block
// joins there, so that every activation size has the same rows).
#include "bench/ops/descriptions/elementwise_kit.h"
#include "bench/ops/gpu_baselines.h"
#include "kernels/ops.h"

namespace engine::op_registry {

const OpDescription& describe_add_relu() {
  static const OpDescription d{
      .id = OpId::add_relu,
      .cases =
          [](const ModelShapes& model, DType dtype) {
            return elementwise_cases(
                {.id = OpId::add_relu,
                 .run = [](const Tensor& a, const Tensor& b, Tensor& y,
                           Stream& stream) { add_relu_forward({.a = a, .b = b, .y = y}, stream); },
                 .tensors_moved = 3},
                model, dtype);
          },
      // aten's fused add+ReLU (what torch.jit fuses add then relu into): faster here than
      // torchvision's in-place add_ then relu_, which passes over the data twice.
      .torch = R"(
def make(dims):
    n, h, w, c = dims
    x, other = torch.randn(n, c, h, w), torch.randn(n, c, h, w)
    out = torch.empty_like(x)
    return lambda: torch.ops.aten._add_relu.out(x, other, out=out)
)",
      .gpu_baseline = kCudnnAddReluBaseline,
      .bench_dtypes = BenchDtypes::each_on_gpu};
  return d;
}

}  // namespace engine::op_registry
