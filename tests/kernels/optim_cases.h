// Shared cases for the optimizer ops: option sets, torch.optim.SGD and torch.optim.AdamW
// written out op by op (in fp32, in PyTorch's order), LARS and clip_grad_norm_ in double, and
// segment tables, used by the CPU and SIMT suites. On CUDA devices the step
// runs in tests/nn (Sgd.CudaMatchesCpu) and the op harness (tests/ops).
#pragma once

#include <cmath>
#include <cstdint>
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

struct AdamWCase {
  std::string name;
  AdamWOptions options;
};

inline const std::vector<AdamWCase> kAdamWCases = {
    {"defaults", {}},
    {"no_decay", {.lr = 1e-2f, .weight_decay = 0.f}},
    {"strong_decay_low_beta2", {.lr = 3e-3f, .beta1 = 0.8f, .beta2 = 0.95f, .weight_decay = 0.1f}},
    {"large_eps_grad_scale",
     {.lr = 1e-3f, .eps = 1e-3f, .weight_decay = 5e-2f, .grad_scale = 0.5f}},
};

// torch.optim.AdamW's _single_tensor_adamw (1.13) for one element, step t from 1, with the
// scalars it takes from Python floats: bias corrections in double, rounded to f32 where they
// meet the tensors.
inline void reference_adamw(const AdamWOptions& o, int64_t t, std::vector<float>& params,
                            const std::vector<float>& grads, std::vector<float>& m,
                            std::vector<float>& v) {
  const double lr = o.lr, beta1 = o.beta1, beta2 = o.beta2;
  const auto decay = static_cast<float>(1.0 - lr * double(o.weight_decay));
  const auto step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, double(t))));
  const auto bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2, double(t))));
  for (size_t i = 0; i < params.size(); ++i) {
    const float g = grads[i] * o.grad_scale;
    params[i] = params[i] * decay;
    m[i] = m[i] * o.beta1;
    m[i] = m[i] + static_cast<float>(1.0 - beta1) * g;
    v[i] = v[i] * o.beta2;
    v[i] = v[i] + static_cast<float>(1.0 - beta2) * g * g;
    const float denom = std::sqrt(v[i]) / bc2_sqrt + o.eps;
    params[i] = params[i] + (-step_size) * m[i] / denom;
  }
}

// Segment tables {begin, end, flags}: a tiny tensor, one exactly a 4-vector, an empty one,
// a long one (past the CPU's threading threshold) and an odd tail, alternately adapted.
inline std::vector<int32_t> segment_table(const std::vector<int32_t>& lengths) {
  std::vector<int32_t> table;
  int32_t begin = 0;
  for (size_t s = 0; s < lengths.size(); ++s) {
    table.insert(table.end(), {begin, begin + lengths[s], s % 2 == 0 ? kSegmentAdapt : 0});
    begin += lengths[s];
  }
  return table;
}

inline int64_t segment_total(const std::vector<int32_t>& table) {
  return table.empty() ? 0 : table[table.size() - 2];
}

// The LARS step of kernels/ops/optim.h in double over every segment.
inline void reference_lars(const LarsOptions& o, const std::vector<int32_t>& table,
                           std::vector<double>& params, const std::vector<float>& grads,
                           std::vector<double>& buffer) {
  for (size_t s = 0; s < table.size() / 3; ++s) {
    const int32_t begin = table[3 * s], end = table[3 * s + 1];
    const bool adapt = (table[3 * s + 2] & kSegmentAdapt) != 0;
    double w2 = 0, g2 = 0;
    for (int32_t i = begin; i < end; ++i) {
      w2 += params[i] * params[i];
      const double g = double(grads[i]) * o.grad_scale;
      g2 += g * g;
    }
    const double w_norm = std::sqrt(w2), g_norm = std::sqrt(g2);
    const double wd = adapt ? double(o.weight_decay) : 0.0;
    double trust = 1.0;
    if (adapt && w_norm > 0 && g_norm > 0) {
      trust = double(o.eta) * w_norm / (g_norm + wd * w_norm + double(o.epsilon));
    }
    for (int32_t i = begin; i < end; ++i) {
      buffer[i] = double(o.momentum) * buffer[i] +
                  double(o.lr) * trust * (double(grads[i]) * o.grad_scale + wd * params[i]);
      params[i] -= buffer[i];
    }
  }
}

}  // namespace engine::testing
