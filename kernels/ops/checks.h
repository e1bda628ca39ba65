// Argument checks shared by the op dispatchers. Each names the op and the tensor, so that
// an error reads e.g. "relu_backward: dy is bf16[4, 8] on cpu, expected the shape of y
// (f32[4, 8] on cpu)".
//
// Optional tensors (a bias, running statistics, a residual) are passed as Tensor and are
// optional when undefined (Tensor{}), never as pointers: the same rule for inputs and
// outputs, and the checks below decide what an undefined one means.
#pragma once

#include <string_view>

#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::ops {

// The name of the op being checked, with which each message starts. A type of its own, so that
// it and the checked tensor's name (a string_view) cannot trade places in a call.
class OpName {
 public:
  constexpr explicit OpName(std::string_view text) : text_(text) {}
  constexpr operator std::string_view() const { return text_; }  // for messages and on_device

 private:
  std::string_view text_;
};

void require_defined(OpName op, std::string_view name, const Tensor& t);
// t is defined and of a float dtype (f32 or bf16). Every op that dispatches on a tensor's
// dtype checks that tensor so: an i32 tensor (labels, argmax) is never taken for bf16.
void require_float(OpName op, std::string_view name, const Tensor& t);
// b has a's dtype, device and element count (shapes may differ only by a reshape).
void require_like(OpName op, std::string_view name_a, const Tensor& a, std::string_view name_b,
                  const Tensor& b);
// t is exactly dtype + shape on device. `context` (e.g. a conv shape) ends the message.
void require_exact(OpName op, std::string_view name, const Tensor& t, const Shape& shape,
                   DType dtype, Device device, std::string_view context = {});
// t is f32 with `numel` elements (any shape) on device: per-channel vectors, statistics.
void require_f32(OpName op, std::string_view name, const Tensor& t, int64_t numel, Device device);
// t is f64 with `numel` elements (any shape) on device: SyncBN's per-channel sums.
void require_f64(OpName op, std::string_view name, const Tensor& t, int64_t numel, Device device);
// An optional f32 vector: nullptr when t is undefined, else require_f32 and its data.
template <typename TensorRef>
auto optional_f32(OpName op, std::string_view name, TensorRef& t, int64_t numel, Device device)
    -> decltype(t.template data<float>()) {
  if (!t.defined()) return nullptr;
  require_f32(op, name, t, numel, device);
  return t.template data<float>();
}
// An optional operand's data: nullptr when t is undefined (its checks are the caller's).
template <typename TensorRef>
auto optional_data(TensorRef& t) -> decltype(t.raw_data()) {
  return t.defined() ? t.raw_data() : nullptr;
}
// The op runs on stream's device, which must be t's device.
void require_on_stream(OpName op, std::string_view name, const Tensor& t, const Stream& stream);
// Workspaces are the caller's (ops never allocate): f32, at least `needed` elements, on device.
// Returns its data, or nullptr when nothing is needed (an undefined workspace is then fine).
float* require_workspace(OpName op, Tensor& workspace, int64_t needed, Device device,
                         std::string_view sizing_function);

}  // namespace engine::ops
