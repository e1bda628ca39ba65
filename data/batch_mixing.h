// MixUp (Zhang et al. 2018) and CutMix (Yun et al. 2019) over a rank's batch, with the
// semantics of timm's Mixup (timm/data/mixup.py, the tensor path of its train.py):
//   - element i is mixed with element n-1-i (the batch flipped), from the unmixed batch;
//   - mode batch: one lambda (and box) for the whole batch; elem: one per element; pair: one
//     per pair (i, n-1-i), both mixed with it;
//   - lambda ~ Beta(alpha, alpha) of mixup or of cutmix (switch_prob picks CutMix when both are
//     on), applied with probability prob (else the element stays unmixed, lambda 1);
//   - CutMix pastes a box of the partner of area (1 - lambda) of the image, centered anywhere
//     and clipped at the borders (or of random side fractions in cutmix_minmax), and lambda is
//     corrected to the area actually kept (correct_lam);
//   - the targets are lambda * smoothed_onehot(own label) + (1 - lambda) * smoothed_onehot(the
//     partner's label), label smoothing folded in (off = s / K, on = 1 - s + s / K).
// The images are mixed after normalization, as timm's Mixup (its FastCollateMixup instead
// mixes uint8 images and rounds; that rounding is the only difference: normalization is affine).
// Weights follow timm's float arithmetic: in batch mode lambda and 1 - lambda are doubles
// rounded to float; per element lambda is a float and 1 - lambda a float subtraction.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "data/mix_random.h"
#include "kernels/dtype.h"

namespace engine::data {

enum class MixMode { batch, pair, elem };

// "batch", "pair", "elem"; nullopt for anything else.
std::optional<MixMode> parse_mix_mode(std::string_view name);
std::string_view mix_mode_name(MixMode mode);

struct MixConfig {
  double mixup_alpha = 0;   // > 0: MixUp on
  double cutmix_alpha = 0;  // > 0: CutMix on
  // CutMix boxes of side fractions drawn from [min, max) instead of from lambda; turns CutMix
  // on with alpha 1 (timm forces cutmix_alpha = 1 with it).
  std::optional<std::array<double, 2>> cutmix_minmax;
  double prob = 1.0;         // probability of mixing a batch (or element, or pair)
  double switch_prob = 0.5;  // with both on: probability of CutMix rather than MixUp
  MixMode mode = MixMode::batch;
  bool correct_lam = true;  // lambda = the area fraction kept after clipping the box
  double label_smoothing = 0;
  int64_t off_epoch =
      0;  // from this 0-based epoch on, no mixing (targets still smoothed); 0: never

  bool enabled() const { return mixup_alpha > 0 || cutmix_alpha > 0 || cutmix_minmax.has_value(); }
  double effective_cutmix_alpha() const { return cutmix_minmax ? 1.0 : cutmix_alpha; }
  // Throws engine::Error naming the field for a value timm would reject or misuse.
  void check() const;
};

// Rows [top, bottom) and columns [left, right) of the image; possibly empty.
struct CutBox {
  int top = 0, bottom = 0, left = 0, right = 0;
  int64_t area() const { return int64_t{bottom - top} * (right - left); }
};

// How element i of the batch becomes its mixed self (with partner n-1-i).
struct ElementMix {
  float own_weight = 1;  // lambda: the weight of the element's own image and label
  float partner_weight = 0;
  std::optional<CutBox> box;  // CutMix: the partner's pixels in this box; else a blend
  bool mixed() const { return partner_weight != 0 || box.has_value(); }
};

struct MixPlan {
  std::vector<ElementMix> elements;
};

// The draws timm's Mixup makes for a batch of n images of height x width, in its order.
// `mixing` false (past off_epoch): nothing drawn, every element unmixed.
MixPlan plan_mix(const MixConfig& config, int64_t n, int height, int width, bool mixing,
                 MixRandom& random);

// Mixes n NHWC images of `dtype` (f32 or bf16; bf16 blends in float and rounds once) in place;
// `scratch` keeps the unmixed batch between calls.
void apply_mix(const MixPlan& plan, void* images, DType dtype, int height, int width,
               std::vector<std::byte>& scratch);

// n x classes soft targets for the labels of the batch.
std::vector<float> mixed_targets(const MixPlan& plan, std::span<const int32_t> labels,
                                 int64_t classes, double label_smoothing);

}  // namespace engine::data
