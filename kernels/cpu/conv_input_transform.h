// The CPU twins' ConvInputTransform (kernels/args/conv.h): x transformed into scratch, in x's
// dtype, each value rounded to it once as the kernels' operand loads round it, for the plain
// convolution to read. Its zero padding is the convolution's own, so it stays 0.
#pragma once

#include <cstdint>

#include "kernels/args/conv.h"
#include "kernels/cpu/scratch.h"
#include "kernels/dtype.h"

namespace engine::cpu {

class TransformedConvInput {
 public:
  // x: rows x channels (NHWC) of dtype (f32 or bf16).
  TransformedConvInput(DType dtype, const void* x, int64_t rows, int64_t channels,
                       const ConvInputTransform& transform);
  const void* data() const { return scratch_.data(); }

 private:
  ScratchFloats scratch_;
};

// Where args (a pass's args with x and input_transform: the forward's, the filter gradient's)
// read x through a transform: runs pass(plain), plain being args with x transformed into
// scratch and no transform left, and returns true; else false, having run nothing.
template <typename Args, typename Pass>
bool run_on_transformed_input(const Args& args, Pass&& pass) {
  if (!args.input_transform.active()) return false;
  const Conv2dShape& shape = args.shape;
  const TransformedConvInput input(args.dtype, args.x, shape.batch * shape.in_h * shape.in_w,
                                   shape.in_channels, args.input_transform);
  Args plain = args;
  plain.x = input.data();
  plain.input_transform = {};
  pass(plain);
  return true;
}

}  // namespace engine::cpu
