// Shared cases for the fused SGD step: option sets and torch.optim.SGD written out op by op
// (in fp32, in PyTorch's order), used by the CPU and SIMT suites. On CUDA devices the step
// runs in tests/nn (Sgd.CudaMatchesCpu) and the op harness (tests/ops).
#pragma once

#include <string>
#include <vector>

#include "kernels/ops/optim.h"

namespace engine::testing {

struct SgdCase {
  std::string name;
  SgdOptions options;
};

inline const std::vector<SgdCase> kSgdCases = {
    {"plain", {0.1f, 0.f, 0.f, 0.f, false, 1.f}},
    {"weight_decay", {0.05f, 0.f, 0.f, 1e-2f, false, 1.f}},
    {"momentum", {0.1f, 0.9f, 0.f, 0.f, false, 1.f}},
    {"momentum_dampening_wd", {0.1f, 0.9f, 0.25f, 5e-4f, false, 1.f}},
    {"nesterov_wd", {0.2f, 0.9f, 0.f, 1e-4f, true, 1.f}},
    {"grad_scale", {0.1f, 0.5f, 0.f, 1e-3f, false, 0.25f}},
};

// 70001 is past the CPU's threading threshold (kernels/cpu/parallel.h), so each thread's
// share is checked, down to the odd element at a share's end.
inline const std::vector<int64_t> kSgdSizes = {1, 3, 4, 7, 33, 1000, 4099, 70001};

// torch.optim.SGD.step (single tensor, maximize=False) for one element:
//   d_p = grad; d_p = d_p.add(p, alpha=wd); buf = clone(d_p) | buf.mul_(m).add_(d_p, 1 - damp)
//   d_p = d_p.add(buf, alpha=m) if nesterov else buf; p.add_(d_p, alpha=-lr)
inline void reference_sgd(const SgdOptions& o, std::vector<float>& params,
                          const std::vector<float>& grads, std::vector<float>& buffer,
                          bool first_step) {
  for (size_t i = 0; i < params.size(); ++i) {
    float d_p = grads[i] * o.grad_scale;
    if (o.weight_decay != 0.f) d_p = d_p + o.weight_decay * params[i];
    if (o.momentum != 0.f) {
      if (first_step) {
        buffer[i] = d_p;
      } else {
        buffer[i] = buffer[i] * o.momentum;
        buffer[i] = buffer[i] + (1.f - o.dampening) * d_p;
      }
      d_p = o.nesterov ? d_p + o.momentum * buffer[i] : buffer[i];
    }
    params[i] = params[i] + (-o.lr) * d_p;
  }
}

}  // namespace engine::testing
