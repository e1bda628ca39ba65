#include "kernels/cpu/optim.h"

#include <cmath>

#include "kernels/cpu/parallel.h"
#include "kernels/optim_scalars.h"

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
  const SgdScalars scalars{step_rate(o.lr, args.lr), o.momentum, 1.f - o.dampening, o.weight_decay,
                           o.grad_scale};
  parallel_for_ranges(args.n, [&](int64_t begin, int64_t end) {
    range(args.params, args.grads, args.momentum_buffer, begin, end, scalars);
  });
}

}  // namespace engine::cpu

namespace engine::cpu {

namespace {

// torch.optim.AdamW (1.13, single tensor) for one element, in its order of f32 operations:
//   p.mul_(1 - lr * wd); m.mul_(beta1).add_(g, alpha=1 - beta1);
//   v.mul_(beta2).addcmul_(g, g, value=1 - beta2);
//   denom = v.sqrt() / bias_correction2_sqrt + eps; p.addcdiv_(m, denom, value=-step_size)
void adamw_range(float* __restrict params, const float* __restrict grads, float* __restrict m,
                 float* __restrict v, int64_t begin, int64_t end, AdamWScalars s) {
  for (int64_t i = begin; i < end; ++i) {
    const float g = grads[i] * s.grad_scale;
    const float p = params[i] * s.decay;
    const float mi = m[i] * s.beta1 + s.one_minus_beta1 * g;
    const float vi = v[i] * s.beta2 + s.one_minus_beta2 * g * g;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / s.bias_correction2_sqrt + s.eps;
    params[i] = p + s.neg_step_size * mi / denom;
  }
}

// Eight running sums, element i into lane i % 8 from the share's start, added in a fixed
// order at the end: the compiler keeps them in vector registers (one chain of dependent
// double adds ran at the add's latency, 5x slower than torch's vector_norm), and the result
// still depends only on the share, not on timing.
double sum_of_squares(const float* __restrict x, int64_t begin, int64_t end) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      const double v = x[i + k];
      lanes[k] += v * v;
    }
  }
  for (int k = 0; i < end; ++i, ++k) {
    const double v = x[i];
    lanes[k] += v * v;
  }
  double sum = 0;
  for (double lane : lanes)
    sum += lane;
  return sum;
}

}  // namespace

void adamw_step(const AdamWStepArgs& args) {
  const AdamWScalars scalars = adamw_step_scalars(adamw_scalars(args.options, args.step),
                                                  args.step_scalars, args.options.weight_decay);
  parallel_for_ranges(args.n, [&](int64_t begin, int64_t end) {
    adamw_range(args.params, args.grads, args.exp_avg, args.exp_avg_sq, begin, end, scalars);
  });
}

// Share k of a segment is [begin + len k / P, begin + len (k + 1) / P), as the CUDA kernel's
// block k, so the partials cover the same elements (their rounding still differs).
void sum_squares(const SumSquaresArgs& args) {
  const int inputs = args.b != nullptr ? 2 : 1;
  const int64_t shares = static_cast<int64_t>(args.segment_count) * args.blocks_per_segment;
  int64_t elements = 0;
  for (int s = 0; s < args.segment_count; ++s)
    elements += args.segments[s * kSegmentFields + 1] - args.segments[s * kSegmentFields];
#pragma omp parallel for schedule(dynamic) if (elements >= kParallelThreshold)
  for (int64_t task = 0; task < shares; ++task) {
    const int64_t s = task / args.blocks_per_segment, k = task % args.blocks_per_segment;
    const int64_t begin = args.segments[s * kSegmentFields];
    const int64_t length = args.segments[s * kSegmentFields + 1] - begin;
    const int64_t from = begin + length * k / args.blocks_per_segment;
    const int64_t to = begin + length * (k + 1) / args.blocks_per_segment;
    args.partials[task * inputs] = sum_of_squares(args.a, from, to);
    if (inputs == 2) args.partials[task * inputs + 1] = sum_of_squares(args.b, from, to);
  }
  for (int s = 0; s < args.segment_count; ++s) {
    for (int input = 0; input < inputs; ++input) {
      double sum = 0;
      for (int k = 0; k < args.blocks_per_segment; ++k)
        sum +=
            args.partials[(static_cast<int64_t>(s) * args.blocks_per_segment + k) * inputs + input];
      args.sums[s * inputs + input] = sum;
    }
  }
}

void clip_grad(const ClipGradArgs& args) {
  const float coefficient = clip_coefficient(*args.sum_squares, args.max_norm);
  float* __restrict grads = args.grads;
  parallel_for_ranges(args.n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      grads[i] *= coefficient;
  });
}

void lars_step(const LarsStepArgs& args) {
  LarsOptions o = args.options;
  o.lr = step_rate(o.lr, args.lr);
  for (int s = 0; s < args.segment_count; ++s) {
    const int32_t* segment = args.segments + s * kSegmentFields;
    const LarsScalars l = lars_scalars(o, segment[2], args.sum_squares + 2 * s);
    float* __restrict params = args.params;
    float* __restrict buffer = args.momentum_buffer;
    const float* __restrict grads = args.grads;
    const float momentum = o.momentum, grad_scale = o.grad_scale;
    const int64_t first = segment[0];
    parallel_for_ranges(segment[1] - first, [&](int64_t begin, int64_t end) {
      for (int64_t i = first + begin; i < first + end; ++i) {
        const float g = grads[i] * grad_scale + l.weight_decay * params[i];
        const float v = momentum * buffer[i] + l.scaled_lr * g;
        buffer[i] = v;
        params[i] -= v;
      }
    });
  }
}

}  // namespace engine::cpu
