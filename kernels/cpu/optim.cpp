#include "kernels/cpu/optim.h"

#include "kernels/cpu/parallel.h"

namespace engine::cpu {

namespace {

// The step's scalars, passed by value: a loop that reads them through a reference cannot be
// vectorized, since each float store to params might change them.
struct SgdScalars {
  float lr;
  float momentum;
  float one_minus_dampening;
  float weight_decay;
  float grad_scale;
};

// One thread's share of the update. The flags are template parameters so that each
// combination is its own branch-free loop, which the compiler vectorizes; the arithmetic is
// the same expression per element in every combination, so the bytes match torch.optim.SGD's
// order of operations whatever the flags.
template <bool kDecay, bool kMomentum, bool kFirstStep, bool kNesterov>
void sgd_range(float* __restrict params, const float* __restrict grads,
               float* __restrict momentum_buffer, int64_t begin, int64_t end, SgdScalars s) {
  for (int64_t i = begin; i < end; ++i) {
    float g = grads[i] * s.grad_scale;
    if constexpr (kDecay) g += s.weight_decay * params[i];
    if constexpr (kMomentum) {
      const float buf =
          kFirstStep ? g : s.momentum * momentum_buffer[i] + s.one_minus_dampening * g;
      momentum_buffer[i] = buf;
      g = kNesterov ? g + s.momentum * buf : buf;
    }
    params[i] -= s.lr * g;
  }
}

using SgdRange = void (*)(float*, const float*, float*, int64_t, int64_t, SgdScalars);

template <bool kDecay, bool kMomentum, bool kFirstStep>
SgdRange pick_nesterov(bool nesterov) {
  return nesterov ? sgd_range<kDecay, kMomentum, kFirstStep, true>
                  : sgd_range<kDecay, kMomentum, kFirstStep, false>;
}

template <bool kDecay, bool kMomentum>
SgdRange pick_first_step(bool first_step, bool nesterov) {
  return first_step ? pick_nesterov<kDecay, kMomentum, true>(nesterov)
                    : pick_nesterov<kDecay, kMomentum, false>(nesterov);
}

template <bool kDecay>
SgdRange pick_momentum(bool momentum, bool first_step, bool nesterov) {
  return momentum ? pick_first_step<kDecay, true>(first_step, nesterov)
                  : pick_first_step<kDecay, false>(first_step, nesterov);
}

}  // namespace

void sgd_step(const SgdStepArgs& args) {
  const SgdOptions& o = args.options;
  const bool decay = o.weight_decay != 0.f;
  const bool use_momentum = o.momentum != 0.f;
  const SgdRange range = decay ? pick_momentum<true>(use_momentum, args.first_step, o.nesterov)
                               : pick_momentum<false>(use_momentum, args.first_step, o.nesterov);
  const SgdScalars scalars{o.lr, o.momentum, 1.f - o.dampening, o.weight_decay, o.grad_scale};
  parallel_for_ranges(args.n, [&](int64_t begin, int64_t end) {
    range(args.params, args.grads, args.momentum_buffer, begin, end, scalars);
  });
}

}  // namespace engine::cpu
