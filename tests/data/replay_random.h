// A RandomSource that hands out draws recorded from torch in order ("f:" uniform, "i:" randint,
// "n:" normal), checking that each is the kind asked for: the tests replay torchvision's random
// choices through the engine's transforms.
#pragma once

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "data/random.h"

namespace engine::data::testing {

class ReplayRandom final : public RandomSource {
 public:
  explicit ReplayRandom(std::vector<std::string> draws) : draws_(std::move(draws)) {}
  float uniform(double, double) override { return static_cast<float>(std::stod(take("f:"))); }
  int64_t randint(int64_t low, int64_t high) override {
    const int64_t value = std::stoll(take("i:"));
    EXPECT_TRUE(low <= value && value < high) << value << " not in [" << low << ", " << high << ")";
    return value;
  }
  float normal() override { return static_cast<float>(std::stod(take("n:"))); }
  bool exhausted() const { return next_ == draws_.size(); }

 private:
  std::string take(const std::string& kind) {
    if (next_ >= draws_.size()) throw std::runtime_error("more draws than torch made");
    const std::string& draw = draws_[next_++];
    if (draw.rfind(kind, 0) != 0) throw std::runtime_error("draw " + draw + " is not " + kind);
    return draw.substr(2);
  }
  std::vector<std::string> draws_;
  size_t next_ = 0;
};

}  // namespace engine::data::testing
