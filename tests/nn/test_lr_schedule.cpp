// LR schedules against torch.optim.lr_scheduler's rates at every optimizer step
// (tests/nn/golden/lr_schedules.golden from tools/make_lr_goldens.py), and the flag parser.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "kernels/error.h"
#include "nn/lr_schedule.h"
#include "tests/error_text.h"

namespace engine::nn {
namespace {

constexpr const char* kMagic = "ENGINE-NN-LR-GOLDEN 1";  // tools/make_lr_goldens.py, version 1
constexpr const char* kRegenerate = "/usr/bin/python3 tools/make_lr_goldens.py tests/nn/golden";

struct GoldenCase {
  std::string name, flag;
  double base_lr = 0;
  TrainingLength length;
  std::vector<double> rates;
};

std::vector<GoldenCase> read_golden_cases() {
  const std::string path = std::string(ENGINE_NN_GOLDEN_DIR) + "/lr_schedules.golden";
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path + "; regenerate: " + kRegenerate);
  std::string line;
  std::getline(file, line);
  if (line != kMagic) {
    throw std::runtime_error(path + " starts with '" + line + "', expected '" + kMagic +
                             "'; regenerate: " + kRegenerate);
  }
  std::vector<GoldenCase> cases;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string keyword;
    GoldenCase c;
    size_t count = 0;
    fields >> keyword >> c.name >> c.base_lr >> c.length.epochs >> c.length.steps_per_epoch >>
        c.flag >> count;
    if (keyword != "case" || !fields) throw std::runtime_error(path + ": bad line " + line);
    for (std::string rate; fields >> rate;)
      c.rates.push_back(std::stod(rate));  // strtod: the double Python's repr names
    if (c.rates.size() != count) throw std::runtime_error(path + ": " + c.name + " is cut short");
    cases.push_back(std::move(c));
  }
  return cases;
}

// PyTorch steps its schedulers by recurrences (group["lr"] * factor) where this evaluates
// the closed forms: the two agree to rounding, a few ulps per step.
constexpr double kRelativeTolerance = 1e-12;

TEST(LrSchedule, MatchesPyTorchAtEveryStep) {
  const std::vector<GoldenCase> cases = read_golden_cases();
  ASSERT_GE(cases.size(), 16u);
  std::set<size_t> kinds_seen;
  double worst = 0;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.name + " '" + c.flag + "'");
    const LrSchedule schedule = parse_lr_schedule(c.flag, c.length);
    kinds_seen.insert(schedule.kind.index());
    for (size_t step = 0; step < c.rates.size(); ++step) {
      const double rate = learning_rate(schedule, c.base_lr, static_cast<int64_t>(step));
      const double expected = c.rates[step];
      const double relative = std::abs(rate - expected) / std::abs(expected);
      worst = std::max(worst, relative);
      ASSERT_LE(relative, kRelativeTolerance)
          << "step " << step << ": " << rate << " vs PyTorch's " << expected;
    }
  }
  EXPECT_EQ(kinds_seen.size(), std::variant_size_v<LrScheduleKind>);
  std::cout << "largest relative difference from PyTorch: " << worst << "\n";
}

TEST(LrSchedule, EpochKindsHoldTheirRateThroughAnEpoch) {
  LrSchedule schedule;
  schedule.kind = StepLr{.step_size = 2, .gamma = 0.5};
  schedule.steps_per_epoch = 3;
  const std::vector<double> expected = {1, 1, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25};
  for (size_t step = 0; step < expected.size(); ++step)
    EXPECT_EQ(learning_rate(schedule, 1.0, static_cast<int64_t>(step)), expected[step]) << step;
}

TEST(LrSchedule, ParsesFlags) {
  const TrainingLength length{.epochs = 90, .steps_per_epoch = 500};
  const LrSchedule step = parse_lr_schedule("step", length);
  ASSERT_TRUE(std::holds_alternative<StepLr>(step.kind));
  EXPECT_EQ(std::get<StepLr>(step.kind).step_size, 30);
  EXPECT_EQ(std::get<StepLr>(step.kind).gamma, 0.1);
  EXPECT_EQ(step.steps_per_epoch, 500);
  EXPECT_EQ(step.warmup.epochs, 0);

  const LrSchedule multi = parse_lr_schedule("multistep:30,60,80", length);
  EXPECT_EQ(std::get<MultiStepLr>(multi.kind).milestones, (std::vector<int64_t>{30, 60, 80}));

  const LrSchedule cosine = parse_lr_schedule("cosine:warmup=5, eta_min=1e-5", length);
  EXPECT_EQ(std::get<CosineLr>(cosine.kind).t_max, 85);  // the epochs after the warmup
  EXPECT_EQ(std::get<CosineLr>(cosine.kind).eta_min, 1e-5);
  EXPECT_EQ(cosine.warmup.epochs, 5);
  EXPECT_EQ(cosine.warmup.start_factor, 0.01);
  EXPECT_EQ(describe(cosine),
            "cosine(t_max=85, eta_min=1e-05) per 500 steps after linear warmup from 0.01 over 5 "
            "epochs");

  const LrSchedule cycle = parse_lr_schedule("onecycle:max_lr=0.4,three_phase=true", length);
  const auto& one = std::get<OneCycleLr>(cycle.kind);
  EXPECT_EQ(one.total_steps, 90 * 500);
  EXPECT_EQ(one.max_lr, 0.4);
  EXPECT_TRUE(one.three_phase);
  EXPECT_DOUBLE_EQ(learning_rate(cycle, 0.1, 0), 0.4 / 25);  // max_lr replaces the base rate
  EXPECT_EQ(describe(parse_lr_schedule("constant", length)), "constant per 500 steps");

  const LrSchedule poly = parse_lr_schedule("poly:end_lr=1e-4,warmup=2", length);
  EXPECT_EQ(std::get<PolyLr>(poly.kind).warmup_steps, 1000);  // per step: 2 epochs of 500
  EXPECT_EQ(poly.warmup.epochs, 0);
  EXPECT_EQ(describe(poly),
            "poly(power=2, end_lr=1e-04, warmup_steps=1000, total_steps=45000) "
            "per step");
  EXPECT_EQ(learning_rate(poly, 8.0, 0), 8.0 / 1000);
  EXPECT_EQ(learning_rate(poly, 8.0, 999), 8.0);
  EXPECT_EQ(learning_rate(poly, 8.0, 45000), 1e-4);  // past the end it stays at end_lr
}

using testing::error_of;

void expect_flag_error(const std::string& flag, const std::string& part) {
  const std::string message =
      error_of([&] { parse_lr_schedule(flag, {.epochs = 10, .steps_per_epoch = 4}); });
  EXPECT_NE(message.find("'" + flag + "'"), std::string::npos) << flag << ": " << message;
  EXPECT_NE(message.find(part), std::string::npos) << flag << ": " << message;
}

TEST(LrSchedule, FlagErrorsNameTheTextAndTheChoices) {
  expect_flag_error("cosin", "unknown kind 'cosin'; choices: constant, step, multistep, cosine");
  expect_flag_error("step:t_max=3", "'t_max' is not an option of step; step takes N or size=N");
  expect_flag_error("poly:warmup=10", "poly: total_steps (40) must exceed the warmup's 40 steps");
  expect_flag_error("step:gamma=fast", "'fast' is not a number for gamma");
  expect_flag_error("step:3,size=4", "given twice");
  expect_flag_error("multistep", "no milestones");
  expect_flag_error("multistep:5,3", "strictly increasing");
  expect_flag_error("multistep:5,gamma=0.1,gamma=0.2", "'gamma' is given twice");
  expect_flag_error("cosine:30", "'30' is not key=value");
  expect_flag_error("cosine:warmup=10", "t_max must be >= 1, got 0");
  expect_flag_error("onecycle:warmup=2", "'warmup' is not an option of onecycle");
  expect_flag_error("onecycle:three_phase=yes", "not true or false");
  expect_flag_error("onecycle:pct_start=1.5", "pct_start must be in [0, 1]");
  expect_flag_error("constant:warmup=2,warmup_factor=0", "start_factor must be in (0, 1]");
  expect_flag_error("step:,", "an empty item");
}

TEST(LrSchedule, RefusesStepsPyTorchRefuses) {
  LrSchedule schedule;
  schedule.kind = OneCycleLr{.total_steps = 10};
  EXPECT_GT(learning_rate(schedule, 0.1, 10), 0);  // PyTorch allows the step after the last
  EXPECT_NE(error_of([&] { learning_rate(schedule, 0.1, 11); }).find("past total_steps 10"),
            std::string::npos);
  // pct_start * total_steps == 1: the first phase is empty, PyTorch divides by zero.
  schedule.kind = OneCycleLr{.total_steps = 10, .pct_start = 0.1};
  EXPECT_NE(error_of([&] { learning_rate(schedule, 0.1, 0); }).find("phase 1 is empty"),
            std::string::npos);
  EXPECT_NE(error_of([&] { learning_rate(LrSchedule{}, 0.1, -1); }).find("step must be >= 0"),
            std::string::npos);
  LrSchedule warm_cycle;
  warm_cycle.kind = OneCycleLr{.total_steps = 10};
  warm_cycle.warmup.epochs = 1;
  EXPECT_NE(error_of([&] { validate_lr_schedule(warm_cycle); }).find("onecycle takes no warmup"),
            std::string::npos);
}

}  // namespace
}  // namespace engine::nn
