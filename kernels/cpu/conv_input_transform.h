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

}  // namespace engine::cpu
