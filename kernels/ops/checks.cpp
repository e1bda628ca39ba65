#include "kernels/ops/checks.h"

#include <string>

#include "kernels/error.h"

namespace engine::ops {

void require_defined(std::string_view op, std::string_view name, const Tensor& t) {
  if (!t.defined()) fail(std::string(op) + ": " + std::string(name) + " is an undefined tensor");
}

void require_like(std::string_view op, std::string_view name_a, const Tensor& a,
                  std::string_view name_b, const Tensor& b) {
  require_defined(op, name_a, a);
  require_defined(op, name_b, b);
  if (a.dtype() != b.dtype() || a.device() != b.device() || a.numel() != b.numel()) {
    fail(std::string(op) + ": " + std::string(name_b) + " is " + b.describe() +
         ", expected the dtype, device and size of " + std::string(name_a) + " (" + a.describe() +
         ")");
  }
}

void require_on_stream(std::string_view op, std::string_view name, const Tensor& t,
                       const Stream& stream) {
  if (t.device() != stream.device()) {
    fail(std::string(op) + ": " + std::string(name) + " is " + t.describe() +
         " but the stream is on " + stream.device().str());
  }
}

}  // namespace engine::ops
