#include "kernels/cpu/optim.h"

#include <algorithm>
#include <cmath>

#include <immintrin.h>

#include "kernels/cpu/bf16_round.h"
#include "kernels/cpu/bf16_round_avx512.h"
#include "kernels/cpu/isa.h"
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

// The step with the bf16 copy written from the registers that hold each updated param (the
// rounding is hidden behind the memory traffic; rounded from L1 block by block afterwards it
// added 1.9 ms to a resnet18 step's 5.6: bench/results/sgd-writes-bf16-copy-amd-epyc.txt).
// The same operations per element as sgd_range, unfused (no FMA), so the same bits.
template <bool kDecay, bool kMomentum, bool kFirstStep, bool kNesterov>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void sgd_range_rounding_avx512(
    float* __restrict params, const float* __restrict grads, float* __restrict momentum_buffer,
    uint16_t* __restrict params_bf16, int64_t begin, int64_t end, SgdScalars s) {
  const __m512 lr = _mm512_set1_ps(s.lr), momentum = _mm512_set1_ps(s.momentum);
  const __m512 one_minus_dampening = _mm512_set1_ps(s.one_minus_dampening);
  const __m512 weight_decay = _mm512_set1_ps(s.weight_decay);
  const __m512 grad_scale = _mm512_set1_ps(s.grad_scale);
  for (int64_t i = begin; i < end; i += 16) {
    const __mmask16 lanes =
        end - i >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (end - i)) - 1);
    __m512 p = _mm512_maskz_loadu_ps(lanes, params + i);
    __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, grads + i), grad_scale);
    if constexpr (kDecay) g = _mm512_add_ps(g, _mm512_mul_ps(weight_decay, p));
    if constexpr (kMomentum) {
      const __m512 buf =
          kFirstStep
              ? g
              : _mm512_add_ps(
                    _mm512_mul_ps(momentum, _mm512_maskz_loadu_ps(lanes, momentum_buffer + i)),
                    _mm512_mul_ps(one_minus_dampening, g));
      _mm512_mask_storeu_ps(momentum_buffer + i, lanes, buf);
      g = kNesterov ? _mm512_add_ps(g, _mm512_mul_ps(momentum, buf)) : buf;
    }
    p = _mm512_sub_ps(p, _mm512_mul_ps(lr, g));
    _mm512_mask_storeu_ps(params + i, lanes, p);
    _mm256_mask_storeu_epi16(params_bf16 + i, lanes, round_to_bf16(p));
  }
}

// visit.template operator()<flag>() for the run-time flag.
template <typename Visit>
void with_flag(bool flag, Visit visit) {
  if (flag) {
    visit.template operator()<true>();
  } else {
    visit.template operator()<false>();
  }
}

}  // namespace

void sgd_step(const SgdStepArgs& args) {
  const SgdOptions& o = args.options;
  const SgdScalars scalars{step_rate(o.lr, args.lr), o.momentum, 1.f - o.dampening, o.weight_decay,
                           o.grad_scale};
  float* params = args.params;
  const float* grads = args.grads;
  float* buffer = args.momentum_buffer;
  uint16_t* copy = args.params_bf16;
  const bool rounds_in_registers = copy != nullptr && use_avx512();
  with_flag(o.weight_decay != 0.f, [&]<bool kDecay>() {
    with_flag(o.momentum != 0.f, [&]<bool kMomentum>() {
      with_flag(args.first_step, [&]<bool kFirstStep>() {
        with_flag(o.nesterov, [&]<bool kNesterov>() {
          parallel_for_ranges(args.n, [&](int64_t begin, int64_t end) {
            if (rounds_in_registers) {
              sgd_range_rounding_avx512<kDecay, kMomentum, kFirstStep, kNesterov>(
                  params, grads, buffer, copy, begin, end, scalars);
              return;
            }
            if (copy == nullptr) {
              sgd_range<kDecay, kMomentum, kFirstStep, kNesterov>(params, grads, buffer, begin, end,
                                                                  scalars);
              return;
            }
            // Elsewhere the copy is rounded in blocks of 16 KiB of params, each while in L1.
            constexpr int64_t kBlock = 4096;
            for (int64_t block = begin; block < end; block += kBlock) {
              const int64_t block_end = std::min(end, block + kBlock);
              sgd_range<kDecay, kMomentum, kFirstStep, kNesterov>(params, grads, buffer, block,
                                                                  block_end, scalars);
              round_to_bf16_bits(params + block, copy + block, block_end - block);
            }
          });
        });
      });
    });
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
