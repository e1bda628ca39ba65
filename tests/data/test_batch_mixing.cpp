// MixUp and CutMix (data/batch_mixing.h) against timm's Mixup: every call recorded by
// tools/make_mixing_goldens.py (10 configurations x 3 batches: batch, elem and pair modes,
// MixUp, CutMix, both, min-max boxes, uncorrected lambdas, label smoothing, prob < 1) replayed
// with timm's own numpy draws must give its mixed batch and soft targets bit for bit. Then
// what timm's test suite cannot say for us: our own Beta draws, the streams' keys, bf16, and
// the switch-off epoch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "data/batch_mixing.h"
#include "kernels/error.h"
#include "tests/data/golden.h"

namespace engine::data {
namespace {

using testing::decode_float_hex;
using testing::GoldenRecord;

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);)
    parts.push_back(part);
  return parts;
}

// Replays recorded draws ("u:<hex double>", "b:<hex double>", "i:<int>") in order, failing
// the test when the code under test asks for another kind of draw or a value out of range.
class ReplayRandom final : public MixRandom {
 public:
  explicit ReplayRandom(const std::string& draws) {
    if (draws != "-") draws_ = split(draws, ',');
  }
  double uniform() override { return real('u'); }
  double beta(double alpha) override {
    EXPECT_GT(alpha, 0.0);
    const double value = real('b');
    EXPECT_TRUE(value >= 0 && value <= 1);
    return value;
  }
  int64_t randint(int64_t low, int64_t high) override {
    const std::string& draw = take('i');
    const int64_t value = std::stoll(draw.substr(2));
    EXPECT_TRUE(low <= value && value < high)
        << "randint(" << low << ", " << high << ") replayed " << value;
    return value;
  }
  size_t left() const { return draws_.size() - next_; }

 private:
  const std::string& take(char kind) {
    static const std::string none = "?:0";
    if (next_ >= draws_.size()) {
      ADD_FAILURE() << "asked for a '" << kind << "' draw after the recorded ones";
      return none;
    }
    const std::string& draw = draws_[next_++];
    EXPECT_EQ(draw[0], kind) << "draw " << next_ - 1 << " was recorded as " << draw;
    return draw;
  }
  double real(char kind) { return std::strtod(take(kind).c_str() + 2, nullptr); }

  std::vector<std::string> draws_;
  size_t next_ = 0;
};

struct GoldenCall {
  std::string name;
  MixConfig config;
  int64_t classes = 0;
  int64_t n = 0;
  int height = 0, width = 0;
  std::vector<int32_t> labels;
  std::string draws;
  std::vector<float> before, after, targets;
};

GoldenCall parse_call(const GoldenRecord& record) {
  const std::vector<std::string>& f = record.fields;
  EXPECT_EQ(f.size(), 18u);
  GoldenCall call;
  call.name = f[0];
  call.config.mode = *parse_mix_mode(f[1]);
  call.config.mixup_alpha = std::stod(f[2]);
  call.config.cutmix_alpha = std::stod(f[3]);
  if (f[4] != "-") {
    const std::vector<std::string> minmax = split(f[4], ',');
    call.config.cutmix_minmax = std::array<double, 2>{std::stod(minmax[0]), std::stod(minmax[1])};
  }
  call.config.prob = std::stod(f[5]);
  call.config.switch_prob = std::stod(f[6]);
  call.config.correct_lam = f[7] == "1";
  call.config.label_smoothing = std::stod(f[8]);
  call.classes = std::stoll(f[9]);
  call.n = std::stoll(f[10]);
  call.height = std::stoi(f[11]);
  call.width = std::stoi(f[12]);
  for (const std::string& label : split(f[13], ','))
    call.labels.push_back(std::stoi(label));
  call.draws = f[14];
  call.before = decode_float_hex(f[15]);
  call.after = decode_float_hex(f[16]);
  call.targets = decode_float_hex(f[17]);
  return call;
}

std::vector<GoldenCall> golden_calls() {
  std::vector<GoldenCall> calls;
  for (const GoldenRecord& record : testing::golden_records(testing::read_golden("mixing"), "mix"))
    calls.push_back(parse_call(record));
  return calls;
}

TEST(BatchMixing, EqualsTimmBitForBitWithItsDraws) {
  const std::vector<GoldenCall> calls = golden_calls();
  ASSERT_EQ(calls.size(), 30u);
  int mixed_elements = 0, boxes = 0, blends = 0;
  std::vector<std::byte> scratch;
  for (const GoldenCall& call : calls) {
    SCOPED_TRACE(call.name + " " + call.draws);
    ReplayRandom random(call.draws);
    const MixPlan plan = plan_mix(call.config, call.n, call.height, call.width, true, random);
    EXPECT_EQ(random.left(), 0u) << "every draw timm made is used";
    std::vector<float> images = call.before;
    apply_mix(plan, images.data(), DType::f32, call.height, call.width, scratch);
    ASSERT_EQ(images.size(), call.after.size());
    for (size_t v = 0; v < images.size(); ++v) {
      ASSERT_EQ(std::bit_cast<uint32_t>(images[v]), std::bit_cast<uint32_t>(call.after[v]))
          << "value " << v << ": " << images[v] << " vs timm " << call.after[v];
    }
    const std::vector<float> targets =
        mixed_targets(plan, call.labels, call.classes, call.config.label_smoothing);
    ASSERT_EQ(targets.size(), call.targets.size());
    for (size_t v = 0; v < targets.size(); ++v) {
      ASSERT_EQ(std::bit_cast<uint32_t>(targets[v]), std::bit_cast<uint32_t>(call.targets[v]))
          << "target " << v << ": " << targets[v] << " vs timm " << call.targets[v];
    }
    for (const ElementMix& element : plan.elements) {
      mixed_elements += element.mixed();
      boxes += element.box.has_value();
      blends += element.mixed() && !element.box;
    }
  }
  // The goldens exercise what they claim to.
  EXPECT_GT(boxes, 20);
  EXPECT_GT(blends, 20);
  EXPECT_LT(mixed_elements, 30 * 6) << "prob < 1 leaves some unmixed";
}

TEST(BatchMixing, TargetsSumToOneAndWeighTheTwoLabels) {
  MixConfig config;
  config.mixup_alpha = 0.4;
  config.cutmix_alpha = 1.0;
  config.mode = MixMode::elem;
  config.label_smoothing = 0.1;
  const std::vector<int32_t> labels = {0, 3, 3, 7, 1, 2, 9, 4};
  const int64_t classes = 10;
  for (uint64_t batch = 0; batch < 20; ++batch) {
    BatchMixRandom random(5, 0, 0, batch);
    const MixPlan plan = plan_mix(config, 8, 16, 16, true, random);
    const std::vector<float> targets = mixed_targets(plan, labels, classes, 0.1);
    for (size_t i = 0; i < labels.size(); ++i) {
      const float* row = targets.data() + i * classes;
      EXPECT_NEAR(std::accumulate(row, row + classes, 0.0), 1.0, 1e-6);
      const ElementMix& mix = plan.elements[i];
      EXPECT_NEAR(mix.own_weight + mix.partner_weight, 1.0, 1e-6);
      const int32_t own = labels[i], partner = labels[labels.size() - 1 - i];
      if (own != partner) {
        EXPECT_NEAR(row[own], 0.9 * mix.own_weight + 0.01, 1e-6);
        EXPECT_NEAR(row[partner], 0.9 * mix.partner_weight + 0.01, 1e-6);
      }
    }
  }
}

// Our Beta(alpha, alpha) against its moments: mean 1/2, variance 1 / (4 (2 alpha + 1)); and
// the small alphas of mixup recipes stay inside [0, 1] with mass near both ends.
TEST(BatchMixRandom, BetaHasTheRightMoments) {
  for (const double alpha : {0.1, 0.2, 0.8, 1.0, 4.0}) {
    BatchMixRandom random(1, 0, 0, 0);
    const int count = 40000;
    double sum = 0, squares = 0;
    int near_ends = 0;
    for (int i = 0; i < count; ++i) {
      const double x = random.beta(alpha);
      ASSERT_TRUE(x >= 0 && x <= 1) << x;
      sum += x;
      squares += x * x;
      near_ends += x < 0.05 || x > 0.95;
    }
    const double mean = sum / count;
    const double variance = squares / count - mean * mean;
    const double expected_variance = 1.0 / (4.0 * (2.0 * alpha + 1.0));
    // Standard error of the mean: sqrt(variance / count) <= 0.0025; 4 of them.
    EXPECT_NEAR(mean, 0.5, 0.01) << "alpha " << alpha;
    EXPECT_NEAR(variance, expected_variance, 0.05 * expected_variance + 0.002) << "alpha " << alpha;
    if (alpha <= 0.2) {
      EXPECT_GT(near_ends, count / 2) << "alpha " << alpha;
    }
  }
}

TEST(BatchMixRandom, StreamsAreKeyedBySeedRankEpochAndBatch) {
  const auto first = [](uint64_t seed, uint64_t rank, uint64_t epoch, uint64_t batch) {
    BatchMixRandom random(seed, rank, epoch, batch);
    return random.uniform();
  };
  EXPECT_EQ(first(3, 1, 2, 7), first(3, 1, 2, 7));
  EXPECT_NE(first(3, 1, 2, 7), first(4, 1, 2, 7));
  EXPECT_NE(first(3, 1, 2, 7), first(3, 0, 2, 7));
  EXPECT_NE(first(3, 1, 2, 7), first(3, 1, 3, 7));
  EXPECT_NE(first(3, 1, 2, 7), first(3, 1, 2, 8));
}

TEST(BatchMixing, Bf16BlendsInFloatAndRoundsOnce) {
  MixConfig config;
  config.mixup_alpha = 1.0;
  const int height = 3, width = 4;
  const size_t values = 4 * height * width * 3;
  std::vector<float> f32(values);
  for (size_t v = 0; v < values; ++v)
    f32[v] = static_cast<float>(bf16(std::sin(0.37f * static_cast<float>(v)) * 2.f));
  std::vector<bf16> half(values);
  for (size_t v = 0; v < values; ++v)
    half[v] = bf16(f32[v]);
  BatchMixRandom random(9, 0, 0, 0);
  const MixPlan plan = plan_mix(config, 4, height, width, true, random);
  ASSERT_TRUE(plan.elements[0].mixed());
  std::vector<std::byte> scratch;
  apply_mix(plan, f32.data(), DType::f32, height, width, scratch);
  apply_mix(plan, half.data(), DType::bf16, height, width, scratch);
  for (size_t v = 0; v < values; ++v)
    ASSERT_EQ(static_cast<float>(half[v]), static_cast<float>(bf16(f32[v]))) << v;
}

TEST(BatchMixing, PastTheOffEpochNothingIsDrawnOrMixedAndTargetsStaySmoothed) {
  MixConfig config;
  config.mixup_alpha = 0.8;
  config.cutmix_alpha = 1.0;
  ReplayRandom no_draws("-");
  const MixPlan plan = plan_mix(config, 4, 8, 8, /*mixing=*/false, no_draws);
  for (const ElementMix& element : plan.elements)
    EXPECT_FALSE(element.mixed());
  const std::vector<float> targets = mixed_targets(plan, std::vector<int32_t>{2, 0, 1, 1}, 4, 0.2);
  EXPECT_FLOAT_EQ(targets[2], 0.85f);  // 1 - 0.2 + 0.2 / 4
  EXPECT_FLOAT_EQ(targets[0], 0.05f);
}

TEST(BatchMixing, OddBatchesLeaveTheMiddleElementAloneInPairMode) {
  MixConfig config;
  config.cutmix_alpha = 1.0;
  config.mode = MixMode::pair;
  BatchMixRandom random(2, 0, 0, 0);
  const MixPlan plan = plan_mix(config, 5, 8, 8, true, random);
  EXPECT_FALSE(plan.elements[2].mixed());
  EXPECT_EQ(plan.elements[0].box->top, plan.elements[4].box->top) << "a pair shares its box";
}

TEST(BatchMixing, BadConfigurationsNameTheSetting) {
  const auto message = [](MixConfig config) {
    try {
      config.check();
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  MixConfig config;
  config.mixup_alpha = -0.1;
  EXPECT_NE(message(config).find("mixup alpha"), std::string::npos) << message(config);
  config = {};
  config.cutmix_minmax = std::array<double, 2>{0.8, 0.2};
  EXPECT_NE(message(config).find("cutmix min,max"), std::string::npos) << message(config);
  config = {};
  config.prob = 1.5;
  EXPECT_NE(message(config).find("probability"), std::string::npos) << message(config);
  config = {};
  config.switch_prob = -1;
  EXPECT_NE(message(config).find("switch probability"), std::string::npos) << message(config);
  EXPECT_EQ(message(MixConfig{}), "accepted");
  EXPECT_FALSE(parse_mix_mode("batches").has_value());
}

}  // namespace
}  // namespace engine::data
