// RandomErasing against torchvision 0.14 with its draws replayed: the gate, the boxes, the
// erased values (0, or the recorded normals), the fallback when no attempt fits (the image
// unchanged), in f32 bit for bit and in bf16 as those values rounded.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "data/random_erasing.h"
#include "kernels/bfloat16.h"
#include "tests/data/augment_golden.h"
#include "tests/data/replay_random.h"

namespace engine::data {
namespace {

using testing::augment_goldens;
using testing::golden_records;
using testing::GoldenRecord;
using testing::ReplayRandom;

TEST(RandomErasingGolden, BoxesAndValuesEqualTorchvisionForTheSameDraws) {
  int erased = 0;
  int kept = 0;
  for (const GoldenRecord& r : golden_records(augment_goldens(), "erase")) {
    const int width = std::stoi(r.fields.at(0));
    const int height = std::stoi(r.fields.at(1));
    RandomErasingOptions options;
    options.probability = std::stod(r.fields.at(2));
    options.scale_min = std::stod(r.fields.at(3));
    options.scale_max = std::stod(r.fields.at(4));
    options.random_values = r.fields.at(5) == "random";
    const size_t count = std::stoul(r.fields.at(6));
    const auto first = r.fields.begin() + 7;
    const std::vector<std::string> draws(first, first + static_cast<std::ptrdiff_t>(count));
    const size_t rest = 7 + count;
    const ErasedBox expected_box{r.fields.at(rest) == "1", std::stoi(r.fields.at(rest + 1)),
                                 std::stoi(r.fields.at(rest + 2)), std::stoi(r.fields.at(rest + 3)),
                                 std::stoi(r.fields.at(rest + 4))};
    const std::vector<float> input = testing::decode_float_hex(r.fields.at(rest + 5));
    const std::vector<float> expected = testing::decode_float_hex(r.fields.at(rest + 6));
    SCOPED_TRACE("p " + r.fields[2] + " value " + r.fields[5] + " draws from " + draws.at(0));

    std::vector<float> values = input;
    ReplayRandom random(draws);
    const ErasedBox box = random_erasing(options, width, height, DType::f32, values.data(), random);
    EXPECT_TRUE(random.exhausted()) << "torch made more draws than we consumed";
    EXPECT_EQ(box.erased, expected_box.erased);
    if (box.erased) {
      EXPECT_EQ(box.top, expected_box.top);
      EXPECT_EQ(box.left, expected_box.left);
      EXPECT_EQ(box.height, expected_box.height);
      EXPECT_EQ(box.width, expected_box.width);
    }
    EXPECT_EQ(std::memcmp(values.data(), expected.data(), values.size() * 4), 0);

    std::vector<bf16> half(input.size());
    for (size_t i = 0; i < input.size(); ++i)
      half[i] = bf16(input[i]);
    ReplayRandom again(draws);
    random_erasing(options, width, height, DType::bf16, half.data(), again);
    for (size_t i = 0; i < half.size(); ++i)
      ASSERT_EQ(half[i].bits, bf16(expected[i]).bits) << "value " << i;
    (box.erased ? erased : kept) += 1;
  }
  EXPECT_GE(erased, 6);
  EXPECT_GE(kept, 3) << "the gate and the no-fit fallback must both be recorded";
}

TEST(RandomErasing, ProbabilityZeroDrawsNothing) {
  std::vector<float> values(4 * 4 * 3, 1.0f);
  ReplayRandom no_draws({});
  EXPECT_FALSE(random_erasing({}, 4, 4, DType::f32, values.data(), no_draws).erased);
  EXPECT_EQ(values, std::vector<float>(values.size(), 1.0f));
}

TEST(RandomErasing, SampleRandomNormalsLookStandard) {
  SampleRandom random(4, 5, 6);
  double sum = 0;
  double squares = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const double v = random.normal();
    sum += v;
    squares += v * v;
  }
  EXPECT_NEAR(sum / kDraws, 0.0, 0.02);
  EXPECT_NEAR(squares / kDraws, 1.0, 0.02);
}

}  // namespace
}  // namespace engine::data
