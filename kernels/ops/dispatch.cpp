#include "kernels/ops/dispatch.h"

#include <string>

#include "kernels/error.h"

namespace engine::ops {

void fail_without_cuda_backend(std::string_view op, Device device) {
  fail(std::string(op) + ": " + device.str() +
       " tensors need the CUDA backend; this build has none (configured with ENGINE_CUDA=OFF or "
       "without nvcc)");
}

}  // namespace engine::ops
