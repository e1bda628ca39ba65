// Our implementation of each OpCase, ready to time: the engine's op on tensors of the case's
// shape, on the stream's device.
#pragma once

#include <functional>

#include "bench/op_cases.h"
#include "kernels/dtype.h"
#include "kernels/stream.h"

namespace engine::bench {

// Allocates what `c` needs, runs the one-time setup a call depends on (BatchNorm statistics
// for its backward, the max-pool argmax for its backward, a first SGD step that fills the
// momentum buffer, as PyTorch's first step does) and returns one call of our op. The closure
// owns its tensors, so they live as long as it. `dtype` is the fc layer's GEMM dtype (x, w,
// y; gradients of w and the bias are f32 master copies); every other case is f32.
std::function<void()> make_native_op(const OpCase& c, DType dtype, Stream& stream);

}  // namespace engine::bench
