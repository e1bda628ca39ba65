// Argument checks shared by the op dispatchers. Each names the op and the tensor, so that
// an error reads e.g. "relu_backward: dy is bf16[4, 8] on cpu, expected the shape of y
// (f32[4, 8] on cpu)".
#pragma once

#include <string_view>

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::ops {

void require_defined(std::string_view op, std::string_view name, const Tensor& t);
// b has a's dtype, device and element count (shapes may differ only by a reshape).
void require_like(std::string_view op, std::string_view name_a, const Tensor& a,
                  std::string_view name_b, const Tensor& b);
// The op runs on stream's device, which must be t's device.
void require_on_stream(std::string_view op, std::string_view name, const Tensor& t,
                       const Stream& stream);

}  // namespace engine::ops
