// conv2d_forward_stats (kernels/cuda/conv_forward_stats.cuh) under the SIMT emulator: the
// convolution's output must be bit for bit the plain forward's, and its BatchNorm statistics
// those the CPU's batchnorm_stats gives for that same output (as stored: rounded to bf16 for
// bf16), whether the epilogue computed them (bf16 on each block tile, tf32) or the fallback's
// separate pass did (split K, the direct epilogue, the fp32 SIMT engine, a y without 16-byte
// rows). Shapes are small but cross every tile edge: several row tiles with a partial last one
// (the merge over row tiles), column tiles with a partial last one, 1x1, 3x3 and strided.
// The kernels under test, compiled by g++ for the emulator in simt_conv_kernels.cpp.
#include "simt_conv_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "conv_engines.h"
#include "conv_reference.h"
#include "kernels/conv_input_value.h"
#include "kernels/cpu/batchnorm.h"
#include "simt_buffer.h"

namespace engine {
namespace {

using cuda::ConvLaunch;
using cuda::GemmEpilogue;
using cuda::GemmTile;
using testing::conv_shape;
using testing::random_values;
using testing::SimtBuffer;

// The statistics against the CPU's of the same stored y, which sums in fp64: the epilogue
// sums at most 128 rows per tile in fp32 (relative error below 128 * 2^-24 = 8e-6 of the
// values' magnitude), then merges a few tiles by Chan's formula; the separate pass is
// batchnorm_stats' own fp32 reduction. 1e-4 (of the standard deviation for the mean, of m2)
// leaves a margin of ten over that; a row left out of one tile moves the mean by about
// std / rows (1e-2 here) and m2 by about 1 / rows: a hundred times the tolerance.
constexpr double kStatsTolerance = 1e-4;

using Engine = testing::ConvEngine;
constexpr Engine kBf16 = testing::kConvBf16, kTf32 = testing::kConvTf32, kFp32 = testing::kConvFp32;

struct StatsCase {
  const char* name;
  Conv2dShape shape;
  Engine engine;
  ConvLaunch options;
  ConvStatsPath path;   // the one it must take
  float bias = 0.f;     // added to every channel (0: no bias)
  int y_offset = 0;     // elements by which y misses 16-byte alignment
  int group_tiles = 0;  // row tiles a group of the merge's first level (0: its choice)
  // x read through BatchNorm-apply and ReLU (a ConvInputTransform), as conv2 and conv3 of a
  // bottleneck read the previous convolution's raw output.
  bool transform = false;
};

ConvLaunch tile(GemmTile t, int split_k = 0) {
  ConvLaunch options;
  options.gemm.tile = t;
  options.gemm.epilogue = GemmEpilogue::staged;
  options.split_k = split_k;
  return options;
}

std::vector<StatsCase> stats_cases() {
  constexpr auto kEpilogue = ConvStatsPath::epilogue, kSeparate = ConvStatsPath::separate_pass;
  // 2 x 9 x 9 = 162 rows: two 128-row tiles (the last of 34 rows), three of 64 (the last of
  // 34); 72 channels: two 64-wide column tiles (the last of 8), one 128-wide one of 72.
  const Conv2dShape three = conv_shape(2, 9, 9, 16, 72, 3, 3, 1, 1);
  // 1x1 stride 2 over 17 x 17: 2 x 9 x 9 = 162 rows again, through the gather.
  const Conv2dShape strided = conv_shape(2, 17, 17, 8, 136, 1, 1, 2, 0);
  // Pointwise (plain GEMM on the rows): 3 x 7 x 7 = 147 rows, 24 channels.
  const Conv2dShape pointwise = conv_shape(3, 7, 7, 16, 24, 1, 1, 1, 0);
  // 3x3 stride 2 over 13 x 13: 2 x 7 x 7 = 98 rows, one 128 tile, two 64 tiles.
  const Conv2dShape three_s2 = conv_shape(2, 13, 13, 8, 16, 3, 3, 2, 1);
  ConvLaunch direct = tile(GemmTile::automatic);
  direct.gemm.epilogue = GemmEpilogue::direct;
  return {
      {"bf16 3x3 128x128", three, kBf16, tile(GemmTile::t128x128), kEpilogue},
      {"bf16 3x3 128x64", three, kBf16, tile(GemmTile::t128x64), kEpilogue},
      {"bf16 3x3 64x128", three, kBf16, tile(GemmTile::t64x128), kEpilogue},
      {"bf16 3x3 64x64", three, kBf16, tile(GemmTile::t64x64), kEpilogue},
      {"bf16 1x1 s2 64x64", strided, kBf16, tile(GemmTile::t64x64), kEpilogue},
      {"bf16 1x1 s2 128x128", strided, kBf16, tile(GemmTile::t128x128), kEpilogue},
      {"bf16 pointwise 128x64", pointwise, kBf16, tile(GemmTile::t128x64), kEpilogue},
      {"bf16 3x3 s2 64x128", three_s2, kBf16, tile(GemmTile::t64x128), kEpilogue},
      // A mean far from zero, as rounded to bf16 (an ulp of 0.25 at 40).
      {"bf16 3x3 bias 40", three, kBf16, tile(GemmTile::t64x64), kEpilogue, 40.f},
      // bf16 with channels not a multiple of 8: element loads (one 128 x 128 tile), yet y's
      // rows of 24 channels are 16-byte runs.
      {"bf16 3x3 element loads", conv_shape(2, 9, 9, 5, 24, 3, 3, 1, 1), kBf16,
       tile(GemmTile::automatic), kEpilogue},
      {"tf32 3x3", three, kTf32, tile(GemmTile::automatic), kEpilogue},
      {"tf32 1x1 s2", strided, kTf32, tile(GemmTile::automatic), kEpilogue},
      {"tf32 3x3 bias 40", three, kTf32, tile(GemmTile::automatic), kEpilogue, 40.f},
      // The merge in two levels (groups of row tiles, then the groups), which these sizes
      // reach only when forced: 3 row tiles of 64 in groups of 2 (the last of one), 2 of 128
      // and 3 of 64 in groups of one.
      {"bf16 3x3 64x64 groups of 2", three, kBf16, tile(GemmTile::t64x64), kEpilogue, 0.f, 0, 2},
      {"bf16 3x3 bias 40 groups of 2", three, kBf16, tile(GemmTile::t64x64), kEpilogue, 40.f, 0, 2},
      {"tf32 3x3 groups of 1", three, kTf32, tile(GemmTile::automatic), kEpilogue, 0.f, 0, 1},
      {"bf16 1x1 s2 64x128 groups of 1", strided, kBf16, tile(GemmTile::t64x128), kEpilogue, 0.f, 0,
       1},
      // The fallbacks: the convolution as usual, then batchnorm_stats over y.
      {"bf16 split K", three, kBf16, tile(GemmTile::t64x64, 2), kSeparate},
      {"tf32 split K", three, kTf32, tile(GemmTile::automatic, 3), kSeparate},
      {"bf16 direct epilogue", three, kBf16, direct, kSeparate},
      {"fp32 SIMT", three, kFp32, tile(GemmTile::automatic), kSeparate},
      {"bf16 y not 16-byte aligned", three, kBf16, tile(GemmTile::t64x64), kSeparate, 0.f, 1},
      {"bf16 channels not a multiple of 8", conv_shape(2, 9, 9, 16, 20, 3, 3, 1, 1), kBf16,
       tile(GemmTile::automatic), kSeparate},
      // With the input transform: the transformed operand loads and the statistics' store in
      // one kernel (16-byte and element loads, the gather and the pointwise rows), and the
      // fallback's convolution transforming too.
      {"bf16 3x3 64x64 transformed", three, kBf16, tile(GemmTile::t64x64), kEpilogue, 0.f, 0, 0,
       true},
      {"bf16 1x1 s2 128x128 transformed", strided, kBf16, tile(GemmTile::t128x128), kEpilogue, 0.f,
       0, 0, true},
      {"bf16 pointwise 128x64 transformed", pointwise, kBf16, tile(GemmTile::t128x64), kEpilogue,
       0.f, 0, 0, true},
      {"bf16 element loads transformed", conv_shape(2, 9, 9, 5, 24, 3, 3, 1, 1), kBf16,
       tile(GemmTile::automatic), kEpilogue, 0.f, 0, 0, true},
      {"tf32 3x3 transformed groups of 1", three, kTf32, tile(GemmTile::automatic), kEpilogue, 0.f,
       0, 1, true},
      {"bf16 split K transformed", three, kBf16, tile(GemmTile::t64x64, 2), kSeparate, 0.f, 0, 0,
       true},
      {"fp32 SIMT transformed", three, kFp32, tile(GemmTile::automatic), kSeparate, 0.f, 0, 0,
       true},
  };
}

// What the tf32 engine multiplies exactly: values with few bits (bf16's), so that y does not
// depend on tf32's rounding and equals the plain forward's anyway.
struct Operands {
  Operands(const Conv2dShape& shape, DType dtype)
      : x(dtype, random_values(shape_numel(shape.input_shape()), 1, true)),
        w(dtype, random_values(shape_numel(shape.filter_shape()), 2, true)) {}
  SimtBuffer x, w;
};

// A BatchNorm's coefficients for x's channels: scales of both signs, shifts of both signs
// (about a third of the values then pass the ReLU).
struct InputCoefficients {
  explicit InputCoefficients(int64_t channels)
      : scale(DType::f32, random_values(channels, 6)),
        shift(DType::f32, random_values(channels, 7)) {}
  ConvInputTransform transform() {
    return {.scale = scale.floats(), .shift = shift.floats(), .relu = true};
  }
  SimtBuffer scale, shift;
};

// The CPU's statistics of y as the device stored it.
std::vector<float> cpu_stats(const SimtBuffer& y, DType dtype, int64_t rows, int64_t channels) {
  const std::vector<float> values = y.values();
  const std::vector<std::byte> bytes = testing::encode(dtype, values);
  std::vector<float> stats(2 * channels + 1, NAN);
  cpu::batchnorm_stats({.dtype = dtype,
                        .x = bytes.data(),
                        .rows = rows,
                        .channels = channels,
                        .stats = stats.data()});
  return stats;
}

// The worst of |mean - expected| / std and |m2 - expected| / m2 over the channels; infinite
// when the counts differ or a value is NaN (an unwritten channel).
double stats_error(const std::vector<float>& actual, const std::vector<float>& expected,
                   int64_t channels) {
  if (actual[2 * channels] != expected[2 * channels]) return INFINITY;
  const double count = expected[2 * channels];
  double worst = 0.0;
  for (int64_t c = 0; c < channels; ++c) {
    const double m2 = expected[channels + c];
    const double stddev = std::sqrt(m2 / count) + 1e-30;
    const double mean_error = std::abs(double(actual[c]) - expected[c]) / stddev;
    const double m2_error = std::abs(double(actual[channels + c]) - m2) / (m2 + 1e-30);
    if (std::isnan(mean_error) || std::isnan(m2_error)) return INFINITY;
    worst = std::max({worst, mean_error, m2_error});
  }
  return worst;
}

// The sums and the finalize the merge wrote are, bit for bit, what the separate phases give
// from the statistics it wrote (the same helpers on both sides).
void expect_finished_phases(const std::vector<float>& stats, const SimtBuffer& sums,
                            const SimtBuffer& batch_stats, const SimtBuffer& running_mean,
                            const SimtBuffer& running_var, std::vector<float> expected_mean,
                            std::vector<float> expected_var, BatchNormFinalizeSumsArgs finalize) {
  const int64_t channels = static_cast<int64_t>(expected_mean.size());
  std::vector<double> expected_sums(2 * channels + 1, NAN);
  std::vector<float> expected_batch_stats(2 * channels + 1, NAN);
  cpu::batchnorm_stats_to_sums(
      {.stats = stats.data(), .channels = channels, .sums = expected_sums.data()});
  finalize.sums = expected_sums.data();
  finalize.channels = channels;
  finalize.running_mean = expected_mean.data();
  finalize.running_var = expected_var.data();
  finalize.batch_stats = expected_batch_stats.data();
  finalize.input_scale = finalize.input_shift = nullptr;  // checked by expect_input_coefficients
  cpu::batchnorm_finalize_sums(finalize);
  EXPECT_EQ(sums.double_values(), expected_sums);
  EXPECT_EQ(batch_stats.values(), expected_batch_stats);
  EXPECT_EQ(running_mean.values(), expected_mean);
  EXPECT_EQ(running_var.values(), expected_var);
}

// The next convolution's input coefficients the finalize wrote: conv_input_from_batchnorm's
// bits (its expression) on the batch statistics written.
void expect_input_coefficients(const SimtBuffer& batch_stats, const BatchNormFinalizeSumsArgs& f,
                               const SimtBuffer& scale, const SimtBuffer& shift) {
  const std::vector<float> stats = batch_stats.values();
  const int64_t channels = static_cast<int64_t>(stats.size() / 2);
  std::vector<float> expected_scale(channels), expected_shift(channels);
  for (int64_t c = 0; c < channels; ++c) {
    const ConvInputCoefficients k = conv_input_coefficients_at(
        {.batch_stats = stats.data(), .weight = f.weight, .bias = f.bias, .channels = channels}, c);
    expected_scale[c] = k.scale;
    expected_shift[c] = k.shift;
  }
  EXPECT_EQ(scale.values(), expected_scale);
  EXPECT_EQ(shift.values(), expected_shift);
}

TEST(ConvStatsSimt, StatisticsOfTheStoredOutput) {
  for (const StatsCase& c : stats_cases()) {
    const Conv2dShape& shape = c.shape;
    const DType dtype = c.engine.dtype;
    SCOPED_TRACE(std::string(c.name) + " " + shape.str() + " " + c.engine.name());
    const int64_t rows = shape.gemm_m(), channels = shape.out_channels;
    const int64_t outputs = rows * channels;
    Operands in(shape, dtype);
    InputCoefficients coefficients(shape.in_channels);
    SimtBuffer bias(DType::f32, std::vector<float>(channels, c.bias));
    SimtBuffer y(dtype, std::vector<float>(outputs, NAN), c.y_offset);
    SimtBuffer stats(DType::f32, std::vector<float>(2 * channels + 1, NAN));
    // The phases the merge may finish: the fp64 sums and the finalize with running stats.
    SimtBuffer sums(std::vector<double>(2 * channels + 1, NAN));
    SimtBuffer batch_stats(DType::f32, std::vector<float>(2 * channels + 1, NAN));
    const std::vector<float> running_mean0 = random_values(channels, 5);
    const std::vector<float> running_var0(channels, 1.5f);
    SimtBuffer running_mean(DType::f32, running_mean0), running_var(DType::f32, running_var0);
    // And the next convolution's input coefficients (a deferred BatchNorm's).
    SimtBuffer bn_weight(DType::f32, random_values(channels, 6));
    SimtBuffer bn_bias(DType::f32, random_values(channels, 7));
    SimtBuffer input_scale = SimtBuffer::f32(channels), input_shift = SimtBuffer::f32(channels);
    const BatchNormFinalizeSumsArgs finalize{.momentum = 0.1f,
                                             .eps = 1e-5f,
                                             .running_mean = running_mean.floats(),
                                             .running_var = running_var.floats(),
                                             .batch_stats = batch_stats.floats(),
                                             .input_scale = input_scale.floats(),
                                             .input_shift = input_shift.floats(),
                                             .weight = bn_weight.floats(),
                                             .bias = bn_bias.floats()};
    SimtBuffer workspace(
        DType::f32,
        std::vector<float>(cuda::forward_stats_workspace(shape, c.options, c.group_tiles).total(),
                           0.f));
    const Conv2dForwardArgs args{
        .shape = shape,
        .dtype = dtype,
        .x = in.x.data(),
        .w = in.w.data(),
        .bias = c.bias != 0.f ? bias.floats() : nullptr,
        .y = y.data(),
        .workspace = workspace.data(),
        .fp32_math = c.engine.math,
        .stats = stats.floats(),
        .stats_sums = sums.as<double>(),
        .stats_finalize = finalize,
        .input_transform = c.transform ? coefficients.transform() : ConvInputTransform{}};
    EXPECT_EQ(cuda::forward_stats_path(args, c.options), c.path);
    cuda::conv2d_forward_stats(args, nullptr, c.options, c.group_tiles);

    // y is the plain forward's (with the same transform), bit for bit.
    SimtBuffer plain_y(dtype, std::vector<float>(outputs, NAN), c.y_offset);
    SimtBuffer plain_workspace = SimtBuffer::f32(workspace.values().size());
    Conv2dForwardArgs plain = args;
    plain.y = plain_y.data();
    plain.workspace = plain_workspace.data();
    plain.stats = nullptr;
    plain.stats_sums = nullptr;
    plain.stats_finalize = {};
    cuda::conv2d_forward(plain, nullptr, c.options);
    EXPECT_EQ(y.values(), plain_y.values());

    const std::vector<float> expected = cpu_stats(y, dtype, rows, channels);
    const std::vector<float> first = stats.values();
    EXPECT_LE(stats_error(first, expected, channels), kStatsTolerance);
    expect_finished_phases(first, sums, batch_stats, running_mean, running_var, running_mean0,
                           running_var0, finalize);
    expect_input_coefficients(batch_stats, finalize, input_scale, input_shift);

    // Again on the same workspace: its counters were left at zero, and the merge's order is
    // fixed, so the statistics come out with the same bits.
    const std::vector<double> first_sums = sums.double_values();
    cuda::conv2d_forward_stats(args, nullptr, c.options, c.group_tiles);
    EXPECT_EQ(stats.values(), first);
    EXPECT_EQ(sums.double_values(), first_sums);
  }
}

// The workspace holds the fallback's regions whatever the options, so one zeroed workspace
// serves every path; with a forced split it also holds the split's partials.
TEST(ConvStatsSimt, WorkspaceCoversEveryPath) {
  const Conv2dShape shape = conv_shape(2, 9, 9, 16, 72, 3, 3, 1, 1);
  const cuda::ForwardStatsWorkspace plain =
      cuda::forward_stats_workspace(shape, tile(GemmTile::t64x64));
  EXPECT_EQ(plain.split_floats, 0);
  EXPECT_EQ(plain.batchnorm_floats,
            cuda::batchnorm_workspace_numel(162, 72, cuda::ChannelReduceLaunch{}));
  EXPECT_EQ(plain.row_tiles, 3);  // 162 rows in 64-row tiles
  EXPECT_EQ(plain.partial_floats, 3 * 72);
  EXPECT_EQ(plain.max_groups, 1);  // groups of at least 8 row tiles
  EXPECT_EQ(plain.group_floats, 72);
  EXPECT_EQ(plain.counter_floats, 4);  // 2 column tiles x (1 group + 1), rounded up to 4
  const cuda::ForwardStatsWorkspace pairs =
      cuda::forward_stats_workspace(shape, tile(GemmTile::t64x64), 2);
  EXPECT_EQ(pairs.max_groups, 2);
  EXPECT_EQ(pairs.counter_floats, 8);  // 2 column tiles x (2 groups + 1), rounded up to 4
  const cuda::ForwardStatsWorkspace split =
      cuda::forward_stats_workspace(shape, tile(GemmTile::t64x64, 2));
  EXPECT_EQ(split.split_floats, 2 * 162 * 72);
  EXPECT_EQ(cuda::conv2d_forward_stats_workspace_bytes(shape, {.split_k = 2}),
            static_cast<size_t>(split.total()) * sizeof(float));
}

}  // namespace
}  // namespace engine
