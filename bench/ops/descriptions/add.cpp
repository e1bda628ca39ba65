// A plain add, the residual block's gradient join, on every activation (the harness only).
#include "bench/ops/descriptions/elementwise_kit.h"
#include "kernels/ops.h"

namespace engine::op_registry {

const OpDescription& describe_add() {
  static const OpDescription d{
      .id = OpId::add, .cases = [](const ModelShapes& model, DType dtype) {
        return elementwise_cases(
            {.id = OpId::add,
             .run = [](const Tensor& a, const Tensor& b, Tensor& y,
                       Stream& stream) { add({.a = a, .b = b, .y = y}, stream); },
             .bench = false},
            model, dtype);
      }};
  return d;
}

}  // namespace engine::op_registry
