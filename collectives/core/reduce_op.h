// The reductions a collective can apply, and how one combining step is described to the
// CPU loops and the CUDA kernels that carry it out.
#pragma once

#include <string_view>

#include "kernels/dtype.h"

namespace engine {

// avg is sum divided by the world size once, at the end; max/min propagate NaN.
enum class ReduceOp { sum, avg, max, min };

std::string_view reduce_op_name(ReduceOp op);
// "sum", "avg", "max" or "min"; throws engine::Error naming the text otherwise.
ReduceOp parse_reduce_op(std::string_view text);

// One combining step: out = op(a, b) in fp32 (for f64: in fp64, so SyncBN's sums keep their
// digits), divided by `divisor` when it is not 1, rounded once to dtype (f32, bf16 or f64).
// The ring passes divisor = world size on the step that finishes an avg.
struct Reduction {
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  int divisor = 1;
};

}  // namespace engine
