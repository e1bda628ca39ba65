// The fill that zeroes or initializes buffers, on every activation (the harness only). Its
// value is not a bf16 number: a bf16 fill rounds it once.
#include "bench/ops/descriptions/elementwise_kit.h"
#include "kernels/ops.h"

namespace engine::op_registry {

const OpDescription& describe_fill() {
  static const OpDescription d{
      .id = OpId::fill, .cases = [](const ModelShapes& model, DType dtype) {
        return elementwise_cases({.id = OpId::fill,
                                  .run = [](const Tensor&, const Tensor&, Tensor& y,
                                            Stream& stream) { fill(y, 1.00390625f, stream); },
                                  .tensors_moved = 1,
                                  .bench = false},
                                 model, dtype);
      }};
  return d;
}

}  // namespace engine::op_registry
