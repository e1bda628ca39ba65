#include "nn/shape_checks.h"

#include <string>

#include "kernels/error.h"

namespace engine::nn {

void fail_in(const Layer& layer, const std::string& what) {
  const std::string type(layer.type());
  fail((layer.name().empty() ? type : layer.name() + " (" + type + ")") + ": " + what);
}

void require_nhwc(const Layer& layer, const Shape& input, int64_t channels) {
  bool ok = input.size() == 4;
  for (const int64_t extent : input)
    ok = ok && extent >= 1;
  if (!ok || (channels >= 0 && input[3] != channels)) {
    fail_in(layer, "input shape " + shape_str(input) + ", expected [N, H, W, " +
                       (channels >= 0 ? std::to_string(channels) : std::string("C")) +
                       "] (NHWC) with every extent >= 1");
  }
}

}  // namespace engine::nn
