// conv2d_backward_data_bn (kernels/cuda/conv_backward_bn.cuh) under the SIMT emulator: the
// gated gradient must be bit for bit the plain conv2d_backward_data's gated by the ReLU's mask
// (recomputed here from x, scale and shift), and grad_sums and the parameter gradients those
// the CPU's batchnorm_backward_reduce gives for that same gated gradient, whether the epilogue
// did the work (bf16 on each block tile, tf32) or the fallback (split K, the stride-phase and
// strided-pointwise paths, the direct epilogue, the fp32 SIMT engine, unaligned tensors,
// channels not a multiple of 8). Shapes cross every tile edge: several row tiles with a
// partial last one (the merge), column tiles with a partial last one, 3x3 and 1x1. The
// residual cases gate by a stored ReLU output instead (a residual block's, which the next
// block's first convolution reads as it is) after adding the identity branch's gradient
// (dx_add), with the add's bits: in the epilogue, in the GEMM's plain epilogue, or by the add's
// own map after a split K or the strided paths.
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

// grad_sums against the CPU's of the same gated gradient, which sums in fp64. Each sum's error
// is measured against the sum of its terms' magnitudes: the epilogue adds at most 128 / lanes
// rows a lane, the lanes, then a few partials, all in fp32 (each add rounding by at most 2^-24
// of the running magnitude: below 200 * 2^-24 = 1.2e-5 of sum |term| for these 162 rows); the
// fallback is batchnorm_backward_reduce's own fp32 reduction. 1e-4 leaves a margin of eight; a
// row left out of one tile moves a channel's sum by that row's term, about 1 / 50 of sum |term|
// where a third of the terms pass the mask: two hundred times the tolerance.
constexpr double kSumsTolerance = 1e-4;

using Engine = testing::ConvEngine;
constexpr Engine kBf16 = testing::kConvBf16, kTf32 = testing::kConvTf32, kFp32 = testing::kConvFp32;

struct DgradCase {
  const char* name;
  Conv2dShape shape;
  Engine engine;
  ConvLaunch options;
  ConvStatsPath path;   // the one it must take
  int group_tiles = 0;  // row tiles a group of the merge's first level (0: its choice)
  int dx_offset = 0;    // elements by which dx misses 16-byte alignment
  int x_offset = 0;     // ... and x
  bool accumulate = false;
  // Gated by a stored ReLU output after adding the identity branch's gradient; add_offset:
  // elements by which that gradient misses 16-byte alignment.
  bool residual = false;
  int add_offset = 0;
};

ConvLaunch tile(GemmTile t, int split_k = 0) {
  ConvLaunch options;
  options.gemm.tile = t;
  options.gemm.epilogue = GemmEpilogue::staged;
  options.split_k = split_k;
  return options;
}

std::vector<DgradCase> dgrad_cases() {
  constexpr auto kEpilogue = ConvStatsPath::epilogue, kSeparate = ConvStatsPath::separate_pass;
  // dx of 2 x 9 x 9 = 162 rows: two 128-row tiles (the last of 34 rows), three of 64 (the last
  // of 34); 72 channels: two 64-wide column tiles (the last of 8), one 128-wide one of 72.
  const Conv2dShape three = conv_shape(2, 9, 9, 72, 16, 3, 3, 1, 1);
  // Pointwise: 3 x 7 x 7 = 147 rows, 24 channels (one partial column tile).
  const Conv2dShape pointwise = conv_shape(3, 7, 7, 24, 16, 1, 1, 1, 0);
  ConvLaunch direct = tile(GemmTile::automatic);
  direct.gemm.epilogue = GemmEpilogue::direct;
  return {
      {"bf16 3x3 128x128", three, kBf16, tile(GemmTile::t128x128), kEpilogue},
      {"bf16 3x3 128x64", three, kBf16, tile(GemmTile::t128x64), kEpilogue},
      {"bf16 3x3 64x128", three, kBf16, tile(GemmTile::t64x128), kEpilogue},
      {"bf16 3x3 64x64", three, kBf16, tile(GemmTile::t64x64), kEpilogue},
      {"bf16 pointwise 128x64", pointwise, kBf16, tile(GemmTile::t128x64), kEpilogue},
      {"bf16 pointwise 64x128", pointwise, kBf16, tile(GemmTile::t64x128), kEpilogue},
      {"tf32 3x3", three, kTf32, tile(GemmTile::automatic), kEpilogue},
      {"tf32 pointwise", pointwise, kTf32, tile(GemmTile::automatic), kEpilogue},
      // The merge in two levels, which these sizes reach only when forced: 3 row tiles of 64 in
      // groups of 2 (the last of one), 2 of 128 in groups of one.
      {"bf16 3x3 64x64 groups of 2", three, kBf16, tile(GemmTile::t64x64), kEpilogue, 2},
      {"bf16 pointwise 64x128 groups of 1", pointwise, kBf16, tile(GemmTile::t64x128), kEpilogue,
       1},
      {"tf32 3x3 groups of 1", three, kTf32, tile(GemmTile::automatic), kEpilogue, 1},
      {"bf16 3x3 accumulate", three, kBf16, tile(GemmTile::t64x64), kEpilogue, 0, 0, 0, true},
      // The fallbacks: the convolution as usual, then batchnorm_backward_reduce gating dx.
      {"bf16 split K", three, kBf16, tile(GemmTile::t64x64, 2), kSeparate},
      {"tf32 split K", three, kTf32, tile(GemmTile::automatic, 3), kSeparate},
      {"bf16 direct epilogue", three, kBf16, direct, kSeparate},
      {"fp32 SIMT", three, kFp32, tile(GemmTile::automatic), kSeparate},
      {"bf16 3x3 stride 2 (phases)", conv_shape(2, 13, 13, 16, 8, 3, 3, 2, 1), kBf16,
       tile(GemmTile::t64x64), kSeparate},
      {"bf16 1x1 stride 2 (stride cells)", conv_shape(2, 17, 17, 16, 8, 1, 1, 2, 0), kBf16,
       tile(GemmTile::t64x64), kSeparate},
      {"bf16 dx not 16-byte aligned", three, kBf16, tile(GemmTile::t64x64), kSeparate, 0, 1},
      {"bf16 x not 16-byte aligned", three, kBf16, tile(GemmTile::t64x64), kSeparate, 0, 0, 1},
      {"tf32 channels not a multiple of 8", conv_shape(2, 9, 9, 20, 16, 3, 3, 1, 1), kTf32,
       tile(GemmTile::automatic), kSeparate},
      {"bf16 fallback accumulate", three, kBf16, direct, kSeparate, 0, 0, 0, true},
      // Residual: the epilogue adds, gates by the stored output and sums.
      {"residual bf16 3x3 128x64", three, kBf16, tile(GemmTile::t128x64), kEpilogue, 0, 0, 0, false,
       true},
      {"residual bf16 pointwise 64x128 groups of 1", pointwise, kBf16, tile(GemmTile::t64x128),
       kEpilogue, 1, 0, 0, false, true},
      {"residual tf32 pointwise", pointwise, kTf32, tile(GemmTile::automatic), kEpilogue, 0, 0, 0,
       false, true},
      {"residual bf16 accumulate", pointwise, kBf16, tile(GemmTile::t64x64), kEpilogue, 0, 0, 0,
       true, true},
      // ... the fallbacks: the add in the GEMM's own epilogue, or by the add's map after it.
      {"residual bf16 split K", three, kBf16, tile(GemmTile::t64x64, 2), kSeparate, 0, 0, 0, false,
       true},
      {"residual bf16 direct epilogue", three, kBf16, direct, kSeparate, 0, 0, 0, false, true},
      {"residual fp32 SIMT", three, kFp32, tile(GemmTile::automatic), kSeparate, 0, 0, 0, false,
       true},
      {"residual bf16 3x3 stride 2 (phases)", conv_shape(2, 13, 13, 16, 8, 3, 3, 2, 1), kBf16,
       tile(GemmTile::t64x64), kSeparate, 0, 0, 0, false, true},
      {"residual bf16 add not 16-byte aligned", three, kBf16, tile(GemmTile::t64x64), kSeparate, 0,
       0, 0, false, true, 1},
  };
}

// The BatchNorm the convolution's input went through: batch statistics (mean, invstd, count)
// and the forward's transform of them (scales and shifts of both signs: about half the values
// pass the ReLU).
struct BatchNormInput {
  BatchNormInput(int64_t rows, int64_t channels, DType dtype, int x_offset)
      : x(dtype, random_values(rows * channels, 11, true), x_offset),
        batch_stats(DType::f32, statistics(rows, channels)),
        scale(DType::f32, random_values(channels, 6)),
        shift(DType::f32, random_values(channels, 7)) {}
  static std::vector<float> statistics(int64_t rows, int64_t channels) {
    std::vector<float> stats = random_values(2 * channels + 1, 12);
    for (int64_t c = 0; c < channels; ++c)
      stats[channels + c] = 0.5f + std::abs(stats[channels + c]);
    stats[2 * channels] = static_cast<float>(rows);
    return stats;
  }
  SimtBuffer x, batch_stats, scale, shift;
};

// g gated by the mask recomputed from x (conv_input_value: the kernels' expression).
std::vector<float> gated(const std::vector<float>& g, const std::vector<float>& x,
                         const std::vector<float>& scale, const std::vector<float>& shift) {
  const size_t channels = scale.size();
  std::vector<float> out(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const size_t c = i % channels;
    out[i] = conv_input_value(x[i], scale[c], shift[c], true) > 0.f ? g[i] : 0.f;
  }
  return out;
}

// g + add rounded to dtype (an add op's bits on the stored g), gated by the stored ReLU
// output a (a > 0, as relu_backward).
std::vector<float> added_and_gated(DType dtype, const std::vector<float>& g,
                                   const std::vector<float>& add, const std::vector<float>& a) {
  std::vector<float> out(g.size());
  for (size_t i = 0; i < g.size(); ++i)
    out[i] = a[i] > 0.f ? testing::round_to(dtype, g[i] + add[i]) : 0.f;
  return out;
}

// The worst error of grad_sums over the channels, each relative to its sum of |terms| (in
// fp64 here); infinite on a NaN (an unwritten channel).
double sums_error(const std::vector<float>& actual, const std::vector<float>& expected,
                  const std::vector<float>& g, const std::vector<float>& x,
                  const std::vector<float>& stats, int64_t channels) {
  std::vector<double> scale(2 * channels, 1e-30);
  for (size_t i = 0; i < g.size(); ++i) {
    const int64_t c = static_cast<int64_t>(i % channels);
    scale[c] += std::abs(double(g[i]));
    scale[channels + c] +=
        std::abs(double(g[i]) * (double(x[i]) - stats[c]) * double(stats[channels + c]));
  }
  double worst = 0.0;
  for (int64_t i = 0; i < 2 * channels; ++i) {
    const double error = std::abs(double(actual[i]) - expected[i]) / scale[i];
    if (std::isnan(error)) return INFINITY;
    worst = std::max(worst, error);
  }
  return worst;
}

TEST(ConvDgradBnSimt, GatedGradientAndBatchNormSums) {
  for (const DgradCase& c : dgrad_cases()) {
    const Conv2dShape& shape = c.shape;
    const DType dtype = c.engine.dtype;
    SCOPED_TRACE(std::string(c.name) + " " + shape.str() + " " + c.engine.name());
    const int64_t rows = shape.batch * shape.in_h * shape.in_w, channels = shape.in_channels;
    SimtBuffer dy(dtype, random_values(shape_numel(shape.output_shape()), 1, true));
    SimtBuffer w(dtype, random_values(shape_numel(shape.filter_shape()), 2, true));
    BatchNormInput bn(rows, channels, dtype, c.x_offset);
    SimtBuffer dx(dtype, std::vector<float>(rows * channels, NAN), c.dx_offset);
    SimtBuffer grad_sums(DType::f32, std::vector<float>(2 * channels, NAN));
    const std::vector<float> old_bias = random_values(channels, 13),
                             old_weight = random_values(channels, 14);
    SimtBuffer bias_grad(DType::f32, c.accumulate ? old_bias : std::vector<float>(channels, NAN));
    SimtBuffer weight_grad(DType::f32,
                           c.accumulate ? old_weight : std::vector<float>(channels, NAN));
    SimtBuffer workspace(
        DType::f32,
        std::vector<float>(
            cuda::backward_data_bn_workspace(shape, c.options, c.group_tiles).total(), 0.f));
    // Residual: the block's output (about half positive) and its identity branch's gradient.
    SimtBuffer relu_output(dtype, random_values(rows * channels, 15, true));
    SimtBuffer add(dtype, random_values(rows * channels, 16, true), c.add_offset);
    Conv2dBackwardDataArgs args{.shape = shape,
                                .dtype = dtype,
                                .dy = dy.data(),
                                .w = w.data(),
                                .dx = dx.data(),
                                .workspace = workspace.data(),
                                .fp32_math = c.engine.math,
                                .batchnorm = {.x = bn.x.data(),
                                              .batch_stats = bn.batch_stats.floats(),
                                              .relu_scale = bn.scale.floats(),
                                              .relu_shift = bn.shift.floats(),
                                              .grad_sums = grad_sums.floats(),
                                              .bias_grad = bias_grad.floats(),
                                              .weight_grad = weight_grad.floats(),
                                              .accumulate = c.accumulate}};
    if (c.residual) {
      args.dx_add = add.data();
      args.batchnorm.relu_output = relu_output.data();
      args.batchnorm.relu_scale = args.batchnorm.relu_shift = nullptr;
    }
    EXPECT_EQ(cuda::backward_data_bn_path(args, c.options), c.path);
    cuda::conv2d_backward_data_bn(args, nullptr, c.options, c.group_tiles);

    // dx is the plain data gradient, as stored, gated by the mask: bit for bit.
    SimtBuffer plain_dx(dtype, std::vector<float>(rows * channels, NAN));
    SimtBuffer plain_workspace = SimtBuffer::f32(workspace.values().size());
    Conv2dBackwardDataArgs plain = args;
    plain.dx = plain_dx.data();
    plain.workspace = plain_workspace.data();
    plain.dx_add = nullptr;
    plain.batchnorm = {};
    cuda::conv2d_backward_data(plain, nullptr, c.options);
    const std::vector<float> x = bn.x.values(), stats = bn.batch_stats.values();
    const std::vector<float> expected_dx =
        c.residual ? added_and_gated(dtype, plain_dx.values(), add.values(), relu_output.values())
                   : gated(plain_dx.values(), x, bn.scale.values(), bn.shift.values());
    ASSERT_EQ(dx.values(), expected_dx);

    // grad_sums: the CPU's reduction of that gradient (no gate: it is gated already).
    const std::vector<std::byte> g_bytes = testing::encode(dtype, expected_dx);
    const std::vector<std::byte> x_bytes = testing::encode(dtype, x);
    std::vector<float> expected_sums(2 * channels, NAN);
    cpu::batchnorm_backward_reduce({.dtype = dtype,
                                    .dy = g_bytes.data(),
                                    .x = x_bytes.data(),
                                    .batch_stats = stats.data(),
                                    .grad_sums = expected_sums.data(),
                                    .rows = rows,
                                    .channels = channels});
    const std::vector<float> first = grad_sums.values();
    EXPECT_LE(sums_error(first, expected_sums, expected_dx, x, stats, channels), kSumsTolerance);
    // The parameter gradients: the same two sums, overwritten or added.
    std::vector<float> expected_bias(channels), expected_weight(channels);
    for (int64_t ch = 0; ch < channels; ++ch) {
      expected_bias[ch] = c.accumulate ? old_bias[ch] + first[ch] : first[ch];
      expected_weight[ch] =
          c.accumulate ? old_weight[ch] + first[channels + ch] : first[channels + ch];
    }
    EXPECT_EQ(bias_grad.values(), expected_bias);
    EXPECT_EQ(weight_grad.values(), expected_weight);

    // Again on the same workspace: its counters were left at zero, and the merge's order is
    // fixed, so the sums come out with the same bits.
    if (c.accumulate) continue;  // (would add twice)
    cuda::conv2d_backward_data_bn(args, nullptr, c.options, c.group_tiles);
    EXPECT_EQ(grad_sums.values(), first);
    EXPECT_EQ(dx.values(), expected_dx);

    // The epilogue's sums from their inputs loaded again (ENGINE_GATED_SUMS=reread, the GPU's
    // A/B) where they take them from the staged tile: the same bits.
    cuda::ConvLaunch reread = c.options;
    reread.gemm.gated_sums = cuda::GatedSums::reread;
    cuda::conv2d_backward_data_bn(args, nullptr, reread, c.group_tiles);
    EXPECT_EQ(grad_sums.values(), first) << "reread";
    EXPECT_EQ(dx.values(), expected_dx) << "reread";
  }
}

// The workspace holds the fallback's regions whatever the options; a forced split adds its
// partials; the phase and stride-cell paths never split.
TEST(ConvDgradBnSimt, WorkspaceCoversEveryPath) {
  const Conv2dShape shape = conv_shape(2, 9, 9, 72, 16, 3, 3, 1, 1);
  const cuda::EpilogueStatsWorkspace plain =
      cuda::backward_data_bn_workspace(shape, tile(GemmTile::t64x64));
  EXPECT_EQ(plain.split_floats, 0);
  EXPECT_EQ(plain.batchnorm_floats,
            cuda::batchnorm_workspace_numel(162, 72, cuda::ChannelReduceLaunch{}));
  EXPECT_EQ(plain.row_tiles, 3);
  EXPECT_EQ(plain.partial_floats, 3 * 72);
  EXPECT_EQ(plain.counter_floats, 4);
  const cuda::EpilogueStatsWorkspace split =
      cuda::backward_data_bn_workspace(shape, tile(GemmTile::t64x64, 2));
  EXPECT_EQ(split.split_floats, 2 * 162 * 72);
  EXPECT_EQ(cuda::conv2d_backward_data_bn_workspace_bytes(shape, {.split_k = 2}),
            static_cast<size_t>(split.total()) * sizeof(float));
  const Conv2dShape phases = conv_shape(2, 13, 13, 16, 8, 3, 3, 2, 1);
  EXPECT_EQ(cuda::backward_data_bn_workspace(phases, tile(GemmTile::t64x64, 2)).split_floats, 0);
}

}  // namespace
}  // namespace engine
