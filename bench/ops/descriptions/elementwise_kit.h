// What the element-wise ops' descriptions share: a case per activation of the model (each
// stage's output and the stem's), and, for ops that read parameter or gradient buffers, the
// same op on views one element into a buffer, as the flat buffers hand out views: no 16-byte
// alignment, so the kernels' scalar paths.
#pragma once

#include <vector>

#include "bench/ops/op_description.h"

namespace engine::op_registry {

struct ElementwiseOp {
  OpId id{};
  // out = f(a, b) on tensors of one shape (an op may ignore a or b).
  void (*run)(const Tensor& a, const Tensor& b, Tensor& out, Stream& stream) = nullptr;
  int tensors_moved = 3;          // tensors read and written: the bench row's bytes
  bool a_is_relu_output = false;  // a holds a ReLU's output, with its exact zeros
  bool views = true;              // also the cases on views one element into a buffer
  bool bench = true;              // bench_kernels times it
};

std::vector<OpCase> elementwise_cases(const ElementwiseOp& op, const ModelShapes& model,
                                      DType dtype);

}  // namespace engine::op_registry
