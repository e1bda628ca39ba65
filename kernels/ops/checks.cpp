#include "kernels/ops/checks.h"

#include <string>

#include "kernels/error.h"

namespace engine::ops {
namespace {

std::string prefix(OpName op, std::string_view name, const Tensor& t) {
  return std::string(op) + ": " + std::string(name) + " is " + t.describe();
}

}  // namespace

void require_defined(OpName op, std::string_view name, const Tensor& t) {
  if (!t.defined()) fail(std::string(op) + ": " + std::string(name) + " is an undefined tensor");
}

void require_float(OpName op, std::string_view name, const Tensor& t) {
  require_defined(op, name, t);
  if (!is_float_dtype(t.dtype()))
    fail(prefix(op, name, t) + ", expected a float dtype (f32 or bf16)");
}

void require_like(OpName op, std::string_view name_a, const Tensor& a, std::string_view name_b,
                  const Tensor& b) {
  require_defined(op, name_a, a);
  require_defined(op, name_b, b);
  if (a.dtype() != b.dtype() || a.device() != b.device() || a.numel() != b.numel()) {
    fail(prefix(op, name_b, b) + ", expected the dtype, device and size of " + std::string(name_a) +
         " (" + a.describe() + ")");
  }
}

void require_exact(OpName op, std::string_view name, const Tensor& t, const Shape& shape,
                   DType dtype, Device device, std::string_view context) {
  require_defined(op, name, t);
  if (t.shape() != shape || t.dtype() != dtype || t.device() != device) {
    fail(prefix(op, name, t) + ", expected " + std::string(dtype_name(dtype)) + shape_str(shape) +
         " on " + device.str() + (context.empty() ? "" : " for " + std::string(context)));
  }
}

void require_f32(OpName op, std::string_view name, const Tensor& t, int64_t numel, Device device) {
  require_defined(op, name, t);
  if (t.dtype() != DType::f32 || t.numel() != numel || t.device() != device) {
    fail(prefix(op, name, t) + ", expected f32 with " + std::to_string(numel) + " elements on " +
         device.str());
  }
}

void require_f64(OpName op, std::string_view name, const Tensor& t, int64_t numel, Device device) {
  require_defined(op, name, t);
  if (t.dtype() != DType::f64 || t.numel() != numel || t.device() != device) {
    fail(prefix(op, name, t) + ", expected f64 with " + std::to_string(numel) + " elements on " +
         device.str());
  }
}

void require_on_stream(OpName op, std::string_view name, const Tensor& t, const Stream& stream) {
  if (t.device() != stream.device()) {
    fail(prefix(op, name, t) + " but the stream is on " + stream.device().str());
  }
}

float* require_workspace(OpName op, Tensor& workspace, int64_t needed, Device device,
                         std::string_view sizing_function) {
  if (needed == 0) return nullptr;
  require_defined(op, "workspace", workspace);
  if (workspace.dtype() != DType::f32 || workspace.numel() < needed ||
      workspace.device() != device) {
    fail(prefix(op, "workspace", workspace) + ", expected f32 with at least " +
         std::to_string(needed) + " elements on " + device.str() + " (" +
         std::string(sizing_function) + ")");
  }
  return workspace.data<float>();
}

}  // namespace engine::ops
