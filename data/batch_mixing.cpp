#include "data/batch_mixing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/error.h"

namespace engine::data {

std::optional<MixMode> parse_mix_mode(std::string_view name) {
  if (name == "batch") return MixMode::batch;
  if (name == "pair") return MixMode::pair;
  if (name == "elem") return MixMode::elem;
  return std::nullopt;
}

std::string_view mix_mode_name(MixMode mode) {
  switch (mode) {
    case MixMode::batch:
      return "batch";
    case MixMode::pair:
      return "pair";
    case MixMode::elem:
      return "elem";
  }
  return "?";
}

void MixConfig::check() const {
  const auto require = [](bool ok, const std::string& what) {
    if (!ok) throw Error("mixing: " + what);
  };
  require(std::isfinite(mixup_alpha) && mixup_alpha >= 0,
          "mixup alpha must be >= 0, got " + std::to_string(mixup_alpha));
  require(std::isfinite(cutmix_alpha) && cutmix_alpha >= 0,
          "cutmix alpha must be >= 0, got " + std::to_string(cutmix_alpha));
  if (cutmix_minmax) {
    const auto [low, high] = *cutmix_minmax;
    require(low > 0 && low < high && high <= 1,
            "cutmix min,max must satisfy 0 < min < max <= 1, got " + std::to_string(low) + "," +
                std::to_string(high));
  }
  require(prob >= 0 && prob <= 1, "probability must be in [0, 1], got " + std::to_string(prob));
  require(switch_prob >= 0 && switch_prob <= 1,
          "switch probability must be in [0, 1], got " + std::to_string(switch_prob));
  require(label_smoothing >= 0 && label_smoothing <= 1,
          "label smoothing must be in [0, 1], got " + std::to_string(label_smoothing));
  require(off_epoch >= 0, "off epoch must be >= 0, got " + std::to_string(off_epoch));
}

namespace {

// timm's weights for a lambda: a double per batch, a float32 per element (see the header).
ElementMix blend_weights(double lambda, MixMode mode) {
  if (mode == MixMode::batch) {
    return {static_cast<float>(lambda), static_cast<float>(1.0 - lambda), std::nullopt};
  }
  const auto own = static_cast<float>(lambda);
  return {own, 1.f - own, std::nullopt};
}

// timm's rand_bbox / rand_bbox_minmax and the lambda correction (cutmix_bbox_and_lam). Per
// element timm's lambda is a numpy float32, so the box's side ratio is float32 arithmetic.
ElementMix cutmix(const MixConfig& config, double lambda, MixMode mode, int height, int width,
                  MixRandom& random) {
  CutBox box;
  if (config.cutmix_minmax) {
    const auto [low, high] = *config.cutmix_minmax;
    const auto side = [&](int size) {
      return static_cast<int>(
          random.randint(static_cast<int64_t>(size * low), static_cast<int64_t>(size * high)));
    };
    const int cut_h = side(height);
    const int cut_w = side(width);
    box.top = static_cast<int>(random.randint(0, height - cut_h));
    box.left = static_cast<int>(random.randint(0, width - cut_w));
    box.bottom = box.top + cut_h;
    box.right = box.left + cut_w;
  } else {
    int cut_h = 0, cut_w = 0;
    if (mode == MixMode::batch) {
      const double ratio = std::sqrt(1.0 - lambda);
      cut_h = static_cast<int>(height * ratio);
      cut_w = static_cast<int>(width * ratio);
    } else {
      const float ratio = std::sqrt(1.f - static_cast<float>(lambda));
      cut_h = static_cast<int>(static_cast<float>(height) * ratio);
      cut_w = static_cast<int>(static_cast<float>(width) * ratio);
    }
    const auto center_y = static_cast<int>(random.randint(0, height));
    const auto center_x = static_cast<int>(random.randint(0, width));
    box.top = std::clamp(center_y - cut_h / 2, 0, height);
    box.bottom = std::clamp(center_y + cut_h / 2, 0, height);
    box.left = std::clamp(center_x - cut_w / 2, 0, width);
    box.right = std::clamp(center_x + cut_w / 2, 0, width);
  }
  if (config.correct_lam || config.cutmix_minmax) {
    lambda = 1.0 - static_cast<double>(box.area()) / static_cast<double>(int64_t{height} * width);
  }
  ElementMix mix = blend_weights(lambda, mode);
  mix.box = box;
  return mix;
}

// Which of MixUp and CutMix a draw uses, and its Beta(alpha, alpha) lambda.
struct LambdaDraw {
  bool use_cutmix = false;
  double lambda = 1;
};

MixPlan plan_batch(const MixConfig& config, int64_t n, int height, int width, MixRandom& random) {
  MixPlan plan{std::vector<ElementMix>(static_cast<size_t>(n))};
  if (!(random.uniform() < config.prob)) return plan;
  LambdaDraw draw;
  const double cutmix_alpha = config.effective_cutmix_alpha();
  if (config.mixup_alpha > 0 && cutmix_alpha > 0) {
    draw.use_cutmix = random.uniform() < config.switch_prob;
    draw.lambda = random.beta(draw.use_cutmix ? cutmix_alpha : config.mixup_alpha);
  } else if (config.mixup_alpha > 0) {
    draw.lambda = random.beta(config.mixup_alpha);
  } else {
    draw.use_cutmix = true;
    draw.lambda = random.beta(cutmix_alpha);
  }
  if (draw.lambda == 1.0) return plan;  // timm returns before drawing a box
  const ElementMix mix = draw.use_cutmix
                             ? cutmix(config, draw.lambda, MixMode::batch, height, width, random)
                             : blend_weights(draw.lambda, MixMode::batch);
  for (ElementMix& element : plan.elements)
    element = mix;
  return plan;
}

// timm's _params_per_elem: whole vectors of draws, one kind after the other.
std::vector<LambdaDraw> draw_per_element(const MixConfig& config, int64_t count,
                                         MixRandom& random) {
  std::vector<LambdaDraw> draws(static_cast<size_t>(count));
  const double cutmix_alpha = config.effective_cutmix_alpha();
  if (config.mixup_alpha > 0 && cutmix_alpha > 0) {
    for (LambdaDraw& draw : draws)
      draw.use_cutmix = random.uniform() < config.switch_prob;
    std::vector<double> cutmix_lambdas(draws.size());
    for (double& lambda : cutmix_lambdas)
      lambda = random.beta(cutmix_alpha);
    for (size_t i = 0; i < draws.size(); ++i) {
      const double mixup_lambda = random.beta(config.mixup_alpha);
      draws[i].lambda = draws[i].use_cutmix ? cutmix_lambdas[i] : mixup_lambda;
    }
  } else {
    const bool cutmix_only = config.mixup_alpha <= 0;
    for (LambdaDraw& draw : draws) {
      draw.use_cutmix = cutmix_only;
      draw.lambda = random.beta(cutmix_only ? cutmix_alpha : config.mixup_alpha);
    }
  }
  // Stored as float32 (timm's lam array), 1 where the element is not mixed.
  for (LambdaDraw& draw : draws) {
    draw.lambda = random.uniform() < config.prob ? static_cast<float>(draw.lambda) : 1.f;
  }
  return draws;
}

MixPlan plan_per_element(const MixConfig& config, int64_t n, int height, int width,
                         MixRandom& random) {
  MixPlan plan{std::vector<ElementMix>(static_cast<size_t>(n))};
  const bool pairs = config.mode == MixMode::pair;
  const std::vector<LambdaDraw> draws = draw_per_element(config, pairs ? n / 2 : n, random);
  for (size_t i = 0; i < draws.size(); ++i) {
    if (draws[i].lambda == 1.0) continue;
    const ElementMix mix = draws[i].use_cutmix
                               ? cutmix(config, draws[i].lambda, config.mode, height, width, random)
                               : blend_weights(draws[i].lambda, config.mode);
    plan.elements[i] = mix;
    if (pairs) plan.elements[static_cast<size_t>(n) - 1 - i] = mix;
  }
  return plan;
}

template <typename T>
void mix_images(const MixPlan& plan, T* images, const T* unmixed, int height, int width) {
  const size_t values = static_cast<size_t>(height) * static_cast<size_t>(width) * 3;
  const size_t n = plan.elements.size();
  for (size_t i = 0; i < n; ++i) {
    const ElementMix& mix = plan.elements[i];
    if (!mix.mixed()) continue;
    T* out = images + i * values;
    const T* own = unmixed + i * values;
    const T* partner = unmixed + (n - 1 - i) * values;
    if (mix.box) {
      const CutBox& box = *mix.box;
      const size_t row_values = static_cast<size_t>(box.right - box.left) * 3;
      for (int y = box.top; y < box.bottom; ++y) {
        const size_t at = (static_cast<size_t>(y) * width + box.left) * 3;
        std::memcpy(out + at, partner + at, row_values * sizeof(T));
      }
      continue;
    }
    for (size_t v = 0; v < values; ++v) {
      // Two rounded products and a rounded sum, as torch's mul then add (no fused multiply-add:
      // the build keeps -ffp-contract off).
      const float a = to_float(own[v]) * mix.own_weight;
      const float b = to_float(partner[v]) * mix.partner_weight;
      out[v] = from_float<T>(a + b);
    }
  }
}

}  // namespace

MixPlan plan_mix(const MixConfig& config, int64_t n, int height, int width, bool mixing,
                 MixRandom& random) {
  if (!mixing || !config.enabled()) return MixPlan{std::vector<ElementMix>(static_cast<size_t>(n))};
  if (config.mode == MixMode::batch) return plan_batch(config, n, height, width, random);
  return plan_per_element(config, n, height, width, random);
}

void apply_mix(const MixPlan& plan, void* images, DType dtype, int height, int width,
               std::vector<std::byte>& scratch) {
  const size_t bytes = plan.elements.size() * static_cast<size_t>(height) *
                       static_cast<size_t>(width) * 3 * dtype_size(dtype);
  scratch.resize(bytes);
  std::memcpy(scratch.data(), images, bytes);
  dispatch_dtype(dtype, [&]<typename T>() {
    mix_images(plan, static_cast<T*>(images), reinterpret_cast<const T*>(scratch.data()), height,
               width);
  });
}

std::vector<float> mixed_targets(const MixPlan& plan, std::span<const int32_t> labels,
                                 int64_t classes, double label_smoothing) {
  const size_t n = plan.elements.size();
  ENGINE_REQUIRE(labels.size() == n, "mixed_targets: one label per element");
  // timm's one_hot: torch.full(off) then scatter(on), float32 values.
  const double off_value = label_smoothing / static_cast<double>(classes);
  const auto off = static_cast<float>(off_value);
  const auto on = static_cast<float>(1.0 - label_smoothing + off_value);
  std::vector<float> targets(n * static_cast<size_t>(classes));
  for (size_t i = 0; i < n; ++i) {
    const ElementMix& mix = plan.elements[i];
    const int32_t own = labels[i];
    const int32_t partner = labels[n - 1 - i];
    ENGINE_REQUIRE(own >= 0 && own < classes, "mixed_targets: label out of range");
    float* row = targets.data() + i * static_cast<size_t>(classes);
    for (int32_t k = 0; k < classes; ++k) {
      const float a = (k == own ? on : off) * mix.own_weight;
      const float b = (k == partner ? on : off) * mix.partner_weight;
      row[k] = a + b;
    }
  }
  return targets;
}

}  // namespace engine::data
