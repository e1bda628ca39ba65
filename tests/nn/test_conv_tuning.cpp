// The convolution tuner (issue 40): the plan table's text form and the cache file's checks on
// the CPU; on a CUDA device (the sim device in CI) every candidate the tuner may pick against
// the CPU, run to run, and the tuner itself: it times, writes, reads back without timing, and
// ignores a corrupt or foreign file with a warning.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/error.h"
#include "kernels/kernel_launches.h"
#include "kernels/ops.h"
#include "kernels/runtime.h"
#include "nn/conv_plan_file.h"
#include "nn/conv_tuner.h"
#include "nn/conv_tuning.h"

namespace engine::nn {
namespace {

ConvProblem problem(int64_t batch, int64_t size, int64_t in, int64_t out, int64_t kernel,
                    int64_t stride, int64_t pad, ConvPass pass, DType dtype = DType::bf16) {
  return {make_conv2d_shape(batch, size, in, out, kernel, stride, pad), pass, dtype,
          Fp32Math::exact};
}

ConvAlgo algo(cuda::GemmTile tile, int split, cuda::GemmEpilogue epilogue,
              ChannelPadding padding = ChannelPadding::automatic) {
  ConvAlgo a;
  a.gemm.tile = tile;
  a.split_k = split;
  a.gemm.epilogue = epilogue;
  a.padding = padding;
  return a;
}

ConvPlans sample_plans() {
  ConvPlans plans;
  plans.set(problem(128, 56, 64, 64, 3, 1, 1, ConvPass::forward),
            {algo(cuda::GemmTile::t64x128, 1, cuda::GemmEpilogue::staged), 412.5});
  plans.set(problem(128, 224, 3, 64, 7, 2, 3, ConvPass::backward_filter, DType::f32),
            {algo(cuda::GemmTile::automatic, 96, cuda::GemmEpilogue::automatic), 670});
  plans.set(problem(128, 224, 3, 64, 7, 2, 3, ConvPass::backward_filter),
            {algo(cuda::GemmTile::t64x64, 66, cuda::GemmEpilogue::staged, ChannelPadding::vector),
             512.5});
  ConvProblem tf32 = problem(32, 14, 256, 256, 3, 2, 1, ConvPass::backward_data, DType::f32);
  tf32.math = Fp32Math::tf32;
  plans.set(tf32, {algo(cuda::GemmTile::automatic, 0, cuda::GemmEpilogue::direct), 0});
  // The same shapes fused: rows of their own.
  ConvProblem stats = problem(128, 56, 64, 64, 3, 1, 1, ConvPass::forward);
  stats.fusion = ConvFusion::input_affine_output_stats;
  plans.set(stats, {algo(cuda::GemmTile::t128x64, 1, cuda::GemmEpilogue::staged), 388.5});
  ConvProblem gated = tf32;
  gated.fusion = ConvFusion::batchnorm_backward;
  plans.set(gated, {algo(cuda::GemmTile::automatic, 1, cuda::GemmEpilogue::staged), 99});
  return plans;
}

const ConvPlanOrigin kOrigin{"NVIDIA H200", "runtime 13000 driver 13000", "0123456789abcdef"};

TEST(ConvPlans, TextRoundTripsEveryField) {
  const ConvPlans plans = sample_plans();
  const ParsedConvPlans parsed = parse_conv_plans(conv_plans_text(plans, kOrigin), "test");
  EXPECT_EQ(parsed.origin, kOrigin);
  ASSERT_EQ(parsed.plans.size(), plans.size());
  for (const auto& [p, entry] : plans.entries()) {
    const ConvPlanEntry* read = parsed.plans.find(p);
    ASSERT_NE(read, nullptr) << p.str();
    EXPECT_EQ(read->algo, entry.algo) << p.str();
    EXPECT_DOUBLE_EQ(read->microseconds, entry.microseconds) << p.str();
  }
  // The problem's every field is in the key: another pass or precision finds nothing.
  ConvProblem other = problem(128, 56, 64, 64, 3, 1, 1, ConvPass::backward_data);
  EXPECT_EQ(parsed.plans.find(other), nullptr);
  other.pass = ConvPass::forward;
  other.dtype = DType::f32;
  EXPECT_EQ(parsed.plans.find(other), nullptr);
  EXPECT_EQ(parsed.plans.algo_for(other), ConvAlgo{});
  // ... and another fusion of a problem with a row.
  ConvProblem fused = problem(128, 56, 64, 64, 3, 1, 1, ConvPass::forward);
  ASSERT_NE(parsed.plans.find(fused), nullptr);
  for (ConvFusion f : {ConvFusion::input_affine, ConvFusion::output_stats}) {
    fused.fusion = f;
    EXPECT_EQ(parsed.plans.find(fused), nullptr) << fused.str();
  }
  fused.fusion = ConvFusion::input_affine_output_stats;
  ASSERT_NE(parsed.plans.find(fused), nullptr);
  EXPECT_EQ(parsed.plans.find(fused)->algo.gemm.tile, cuda::GemmTile::t128x64);
  EXPECT_EQ(fused.str(), "forward bf16 " + fused.shape.str() + " + affine+stats");
  // The padding column.
  const ConvPlanEntry* stem =
      parsed.plans.find(problem(128, 224, 3, 64, 7, 2, 3, ConvPass::backward_filter));
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->algo.padding, ChannelPadding::vector);
}

// A table written before the fusion column (format 1) reads as plain passes.
TEST(ConvPlans, FormatOneTablesReadAsPlainPasses) {
  const std::string text =
      "format\t1\ngpu\tNVIDIA H200\n"
      "forward\tbf16\texact\t128\t56\t56\t64\t64\t3\t3\t1\t1\t1\t1\t1\t1\t64x128\t1\t"
      "staged\t412.5\n";
  const ParsedConvPlans parsed = parse_conv_plans(text, "old.tsv");
  ASSERT_EQ(parsed.plans.size(), 1u);
  const ConvProblem plain = problem(128, 56, 64, 64, 3, 1, 1, ConvPass::forward);
  ASSERT_NE(parsed.plans.find(plain), nullptr);
  EXPECT_EQ(parsed.plans.find(plain)->algo.gemm.tile, cuda::GemmTile::t64x128);
  // A format 1 row with a fusion column is refused, as a format 2 row without one.
  std::string widened = text;
  widened.replace(widened.find("exact\t"), 6, "exact\tnone\t");
  EXPECT_THROW(parse_conv_plans(widened, "old.tsv"), Error);
  std::string narrowed = text;
  narrowed.replace(narrowed.find("format\t1"), 8, "format\t2");
  EXPECT_THROW(parse_conv_plans(narrowed, "old.tsv"), Error);
}

// A table written before the padding column (format 2) keeps its fusions, its padding the
// heuristic's; a format 2 row with a padding column is refused.
TEST(ConvPlans, FormatTwoTablesReadWithTheHeuristicsPadding) {
  const std::string text =
      "format\t2\ngpu\tNVIDIA H200\n"
      "backward_filter\tbf16\texact\tnone\t128\t224\t224\t3\t64\t7\t7\t2\t2\t3\t3\t1\t1\t"
      "auto\t132\tstaged\t2500\n";
  const ParsedConvPlans parsed = parse_conv_plans(text, "old.tsv");
  const ConvPlanEntry* stem =
      parsed.plans.find(problem(128, 224, 3, 64, 7, 2, 3, ConvPass::backward_filter));
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->algo.split_k, 132);
  EXPECT_EQ(stem->algo.padding, ChannelPadding::automatic);
  EXPECT_DOUBLE_EQ(stem->microseconds, 2500);
  std::string widened = text;
  widened.replace(widened.find("staged\t"), 7, "staged\tvector\t");
  EXPECT_THROW(parse_conv_plans(widened, "old.tsv"), Error);
  widened.replace(widened.find("format\t2"), 8, "format\t3");
  EXPECT_EQ(parse_conv_plans(widened, "new.tsv")
                .plans.find(problem(128, 224, 3, 64, 7, 2, 3, ConvPass::backward_filter))
                ->algo.padding,
            ChannelPadding::vector);
}

TEST(ConvPlans, MalformedTextIsNamedWithItsLine) {
  const std::string good = conv_plans_text(sample_plans(), kOrigin);
  const auto error_of = [](const std::string& text) {
    try {
      parse_conv_plans(text, "plans.tsv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(parsed)");
  };
  EXPECT_NE(error_of("").find("no 'format' row"), std::string::npos) << error_of("");
  // A row cut short (a truncated file).
  const std::string truncated = good.substr(0, good.size() - 9);
  EXPECT_NE(error_of(truncated).find("plans.tsv:"), std::string::npos) << error_of(truncated);
  std::string bad_tile = good;
  bad_tile.replace(bad_tile.find("64x128"), 6, "96x96!");
  EXPECT_NE(error_of(bad_tile).find("bad algorithm"), std::string::npos) << error_of(bad_tile);
  std::string negative = good;
  negative.replace(negative.find("\t56\t56\t"), 8, "\t-5\t56\t");
  EXPECT_NE(error_of(negative).find("invalid shape"), std::string::npos) << error_of(negative);
  std::string twice = good + good.substr(good.rfind("\nforward") + 1);
  EXPECT_NE(error_of(twice).find("a second row"), std::string::npos) << error_of(twice);
  std::string future = good;
  future.replace(future.find("format\t3"), 8, "format\t4");
  EXPECT_NE(error_of(future).find("format 4"), std::string::npos) << error_of(future);
  std::string bad_padding = good;
  bad_padding.replace(bad_padding.find("\tvector\t"), 8, "\tpadded\t");
  EXPECT_NE(error_of(bad_padding).find("unknown padding"), std::string::npos)
      << error_of(bad_padding);
  std::string bad_fusion = good;
  bad_fusion.replace(bad_fusion.find("affine+stats"), 12, "affine+relu!");
  EXPECT_NE(error_of(bad_fusion).find("unknown fusion"), std::string::npos) << error_of(bad_fusion);
}

class ConvPlanFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("conv_plans_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / "sub" / "plans.tsv").string(); }
  std::filesystem::path dir_;
};

TEST_F(ConvPlanFileTest, WritesAtomicallyAndReadsBack) {
  write_conv_plan_file(path(), sample_plans(), kOrigin);
  std::string warning;
  const ConvPlans read = read_conv_plan_file(path(), kOrigin, &warning);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(read.size(), sample_plans().size());
  // Nothing but the file in its folder: the temporary was renamed.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_ / "sub"),
                          std::filesystem::directory_iterator()),
            1);
}

TEST_F(ConvPlanFileTest, MissingFileIsSilentlyEmpty) {
  std::string warning;
  EXPECT_EQ(read_conv_plan_file(path(), kOrigin, &warning).size(), 0u);
  EXPECT_EQ(warning, "");
}

TEST_F(ConvPlanFileTest, ForeignStaleOrCorruptFilesAreIgnoredWithAWarning) {
  struct Case {
    ConvPlanOrigin written;
    std::string expected_words;
  };
  const Case cases[] = {
      {{"NVIDIA H100 80GB HBM3", kOrigin.cuda, kOrigin.kernels}, "timed on a NVIDIA H100"},
      {{kOrigin.gpu, "runtime 12080 driver 12080", kOrigin.kernels}, "with CUDA runtime 12080"},
      {{kOrigin.gpu, kOrigin.cuda, "fedcba9876543210"}, "other CUDA kernels"},
  };
  for (const Case& c : cases) {
    write_conv_plan_file(path(), sample_plans(), c.written);
    std::string warning;
    EXPECT_EQ(read_conv_plan_file(path(), kOrigin, &warning).size(), 0u);
    EXPECT_NE(warning.find(c.expected_words), std::string::npos) << warning;
    EXPECT_NE(warning.find(path()), std::string::npos) << warning;
  }
  std::ofstream(path(), std::ios::trunc) << "format\t1\nforward\tbf16\tgarbage\n";
  std::string warning;
  EXPECT_EQ(read_conv_plan_file(path(), kOrigin, &warning).size(), 0u);
  EXPECT_NE(warning.find("ignoring the convolution plans in " + path()), std::string::npos)
      << warning;
}

TEST(ConvPlanDefaults, EveryCommittedTableParsesAndNoneIsForAnUnknownGpu) {
  EXPECT_EQ(default_conv_plans({"no such GPU", "", ""}).size(), 0u);
}

// Rank 0's table reaches every rank through a sum in which the others add zeros.
TEST(ConvPlanSharing, ASumOverRanksGivesEveryRankRankZerosTable) {
  const ConvPlans plans = sample_plans();
  std::vector<ConvProblem> problems;
  for (const auto& [p, entry] : plans.entries())
    problems.push_back(p);
  problems.push_back(problem(8, 7, 512, 512, 3, 1, 1, ConvPass::forward));  // no row
  std::vector<float> rank0 = encode_conv_plans(plans, problems);
  const std::vector<float> rank1 = encode_conv_plans(ConvPlans{}, problems);
  for (size_t i = 0; i < rank0.size(); ++i)
    rank0[i] += rank1[i];
  const ConvPlans shared = decode_conv_plans(rank0, problems);
  EXPECT_EQ(shared.size(), plans.size());
  for (const auto& [p, entry] : plans.entries())
    EXPECT_EQ(shared.algo_for(p), entry.algo);
  EXPECT_EQ(shared.find(problems.back()), nullptr);
}

// ---------------------------------------------------------------------------------------
// On a CUDA device

std::vector<float> pseudo_random(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t state = seed * 2654435761u + 1;
  for (float& x : v) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return v;
}

Tensor operand(const Shape& shape, DType dtype, Device device, uint32_t seed, Stream& stream) {
  const Tensor host = Tensor::from_floats(shape, pseudo_random(shape_numel(shape), seed));
  Tensor f32 = device.is_cpu() ? host : host.to(device, stream);
  if (dtype == DType::f32) return f32;
  Tensor out = Tensor::empty(shape, dtype, device);
  cast(f32, out, stream);
  return out;
}

// The pass's output on `stream`'s device with `algo`, as floats.
std::vector<float> run_pass(const ConvProblem& p, const ConvAlgo& algo, Stream& stream) {
  const Device device = stream.device();
  const Conv2dShape& s = p.shape;
  Tensor x = operand(s.input_shape(), p.dtype, device, 1, stream);
  Tensor w = operand(s.filter_shape(), p.dtype, device, 2, stream);
  Tensor dy = operand(s.output_shape(), p.dtype, device, 3, stream);
  Tensor none;
  switch (p.pass) {
    case ConvPass::forward: {
      Tensor y = Tensor::empty(s.output_shape(), p.dtype, device);
      Tensor ws =
          Tensor::empty({std::max<int64_t>(1, conv2d_forward_workspace_numel(s, device, algo))},
                        DType::f32, device);
      conv2d_forward(s, {.x = x, .w = w, .bias = none, .y = y, .workspace = ws}, stream, algo);
      return y.to_floats(stream);
    }
    case ConvPass::backward_data: {
      Tensor dx = Tensor::empty(s.input_shape(), p.dtype, device);
      Tensor ws = Tensor::empty(
          {std::max<int64_t>(1, conv2d_backward_data_workspace_numel(s, device, algo))}, DType::f32,
          device);
      conv2d_backward_data(s, {.dy = dy, .w = w, .dx = dx, .workspace = ws}, stream, algo);
      return dx.to_floats(stream);
    }
    case ConvPass::backward_filter: {
      Tensor dw = Tensor::empty(s.filter_shape(), DType::f32, device);
      Tensor ws = Tensor::empty(
          {std::max<int64_t>(1, conv2d_backward_filter_workspace_numel(s, device, algo))},
          DType::f32, device);
      conv2d_backward_filter(s,
                             {.x = x,
                              .dy = dy,
                              .dw = dw,
                              .dbias = none,
                              .workspace = ws,
                              .write = GradWrite::overwrite},
                             stream, algo);
      return dw.to_floats(stream);
    }
  }
  return {};
}

double relative_max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

// Small shapes with every path the candidates choose between: 16-byte bf16 operands (four
// tiles), element loads (the stem's 3 channels) or (its bf16 filter gradient) x padded to 8,
// split K (K = 576 over 16 output pixels), strided input gradients by stride phase and by
// stride cells.
std::vector<ConvProblem> device_problems() {
  std::vector<ConvProblem> problems;
  for (const DType dtype : {DType::bf16, DType::f32}) {
    for (const ConvPass pass :
         {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_filter}) {
      problems.push_back(problem(2, 8, 16, 16, 3, 1, 1, pass, dtype));
      problems.push_back(problem(1, 4, 64, 64, 3, 1, 1, pass, dtype));
      problems.push_back(problem(2, 8, 16, 32, 3, 2, 1, pass, dtype));
      problems.push_back(problem(2, 8, 16, 32, 1, 2, 0, pass, dtype));
    }
    problems.push_back(problem(1, 16, 3, 8, 7, 2, 3, ConvPass::forward, dtype));
    problems.push_back(problem(1, 16, 3, 8, 7, 2, 3, ConvPass::backward_filter, dtype));
  }
  return problems;
}

class ConvTuningCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0)
      GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  }
};

TEST_F(ConvTuningCuda, EveryCandidateMatchesTheCpuAndRepeatsItsBits) {
  Stream cpu;
  Stream gpu(Device::cuda(0));
  size_t tiles_seen = 0, splits_seen = 0, padded_seen = 0;
  for (const ConvProblem& p : device_problems()) {
    const std::vector<ConvAlgo> candidates = conv2d_algo_candidates(p, gpu.device());
    ASSERT_FALSE(candidates.empty()) << p.str();
    const std::vector<float> reference = run_pass(p, {}, cpu);
    // bf16 outputs round to 8 bits of mantissa; a filter gradient is an f32 sum either way.
    const double tolerance =
        p.dtype == DType::bf16 && p.pass != ConvPass::backward_filter ? 1e-2 : 1e-4;
    for (const ConvAlgo& a : candidates) {
      SCOPED_TRACE(p.str() + ": " + conv_algo_text(a));
      const std::vector<float> first = run_pass(p, a, gpu);
      EXPECT_LE(relative_max_difference(first, reference), tolerance);
      EXPECT_EQ(run_pass(p, a, gpu), first);  // the same bits again
      tiles_seen += a.gemm.tile == cuda::GemmTile::t64x64;
      splits_seen += a.split_k > 1;
      padded_seen += a.padding == ChannelPadding::vector;
    }
  }
  EXPECT_GT(tiles_seen, 0u);
  EXPECT_GT(splits_seen, 0u);
  EXPECT_GT(padded_seen, 0u);  // the bf16 stem's filter gradient, x padded to 8 channels
}

// The fused passes are timed as the layers run them: their own workspaces (zeroed, with the
// epilogues' counters) and operands, every candidate, including the split ones, which fall back
// to the plain pass and a separate reduction.
TEST_F(ConvTuningCuda, TimesEveryCandidateOfTheFusedPasses) {
  Stream gpu(Device::cuda(0));
  const ConvTunerOptions fast{.samples = 1, .sample_microseconds = 0};
  for (const DType dtype : {DType::bf16, DType::f32}) {
    for (const auto& [pass, fusion] : {std::pair{ConvPass::forward, ConvFusion::output_stats},
                                       {ConvPass::forward, ConvFusion::input_affine},
                                       {ConvPass::forward, ConvFusion::input_affine_output_stats},
                                       {ConvPass::backward_data, ConvFusion::batchnorm_backward},
                                       {ConvPass::backward_filter, ConvFusion::input_affine}}) {
      // K = 576 over 16 output pixels: candidates with split K among them.
      ConvProblem p = problem(1, 4, 64, 64, 3, 1, 1, pass, dtype);
      p.fusion = fusion;
      SCOPED_TRACE(p.str());
      const std::vector<ConvAlgo> candidates = conv2d_algo_candidates(p, gpu.device());
      const uint64_t before = kernel_launches();
      const std::vector<ConvCandidateTime> times = time_conv_candidates(p, gpu, fast);
      const uint64_t fused_launches = kernel_launches() - before;
      ASSERT_EQ(times.size(), candidates.size());
      for (const ConvCandidateTime& t : times)
        EXPECT_GT(t.microseconds, 0) << conv_algo_text(t.algo);
      // The reductions ran: a split candidate (and every f32 one) reduces in a pass of its own
      // after the convolution, which the plain pass never launches.
      ConvProblem plain = p;
      plain.fusion = ConvFusion::none;
      const uint64_t plain_before = kernel_launches();
      ASSERT_EQ(time_conv_candidates(plain, gpu, fast).size(), candidates.size());
      const uint64_t plain_launches = kernel_launches() - plain_before;
      if (fusion == ConvFusion::input_affine)
        EXPECT_EQ(fused_launches, plain_launches);  // the transform is in the loads
      else
        EXPECT_GT(fused_launches, plain_launches);
    }
  }
  // A plan for the fused problem is not one for the plain pass.
  ConvPlans plans;
  ConvProblem fused = problem(1, 4, 64, 64, 3, 1, 1, ConvPass::forward);
  fused.fusion = ConvFusion::output_stats;
  const ConvTuneReport report = tune_convolutions({fused}, plans, gpu, fast);
  EXPECT_EQ(report.problems_tuned, 1);
  EXPECT_NE(plans.find(fused), nullptr);
  EXPECT_EQ(plans.find(problem(1, 4, 64, 64, 3, 1, 1, ConvPass::forward)), nullptr);
}

TEST_F(ConvTuningCuda, TunesWritesThenReadsWithoutTimingAndRetimesABadFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("conv_tuning_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  const std::string file = (dir / "plans.tsv").string();
  Stream gpu(Device::cuda(0));
  const std::vector<ConvProblem> problems = {
      problem(2, 8, 16, 16, 3, 1, 1, ConvPass::forward),
      problem(2, 8, 16, 16, 3, 1, 1, ConvPass::backward_filter)};
  const ConvTuning tuning{ConvTuningMode::on, file, 600};
  const ConvTunerOptions fast{.samples = 1, .sample_microseconds = 0};

  const ConvPlanChoice first = choose_conv_plans(tuning, problems, gpu, fast);
  EXPECT_TRUE(first.warnings.empty());
  EXPECT_EQ(first.plans.size(), problems.size());
  EXPECT_NE(first.summary.find("2 timed"), std::string::npos) << first.summary;
  ASSERT_TRUE(std::filesystem::exists(file));

  const ConvPlanChoice second = choose_conv_plans(tuning, problems, gpu, fast);
  EXPECT_NE(second.summary.find("2 from " + file + ", 0 timed"), std::string::npos)
      << second.summary;
  for (const ConvProblem& p : problems) {
    EXPECT_EQ(second.plans.algo_for(p), first.plans.algo_for(p)) << p.str();
  }

  // Another GPU's file, then a corrupt one: one warning each, timed again, rewritten.
  ParsedConvPlans written = parse_conv_plans(conv_plans_text(first.plans, kOrigin), "x");
  write_conv_plan_file(file, written.plans, kOrigin);
  const ConvPlanChoice foreign = choose_conv_plans(tuning, problems, gpu, fast);
  ASSERT_EQ(foreign.warnings.size(), 1u);
  EXPECT_NE(foreign.warnings[0].find("timed on a NVIDIA H200"), std::string::npos)
      << foreign.warnings[0];
  EXPECT_NE(foreign.summary.find("2 timed"), std::string::npos) << foreign.summary;
  std::ofstream(file, std::ios::trunc) << "format\t1\nnot a row\n";
  const ConvPlanChoice corrupt = choose_conv_plans(tuning, problems, gpu, fast);
  ASSERT_EQ(corrupt.warnings.size(), 1u);
  EXPECT_NE(corrupt.summary.find("2 timed"), std::string::npos) << corrupt.summary;
  EXPECT_NE(choose_conv_plans(tuning, problems, gpu, fast).summary.find("0 timed"),
            std::string::npos);

  // A cap of 0 s times nothing: every problem keeps the heuristic's algorithm (no row).
  const ConvPlanChoice capped =
      choose_conv_plans({ConvTuningMode::on, "none", 0}, problems, gpu, fast);
  EXPECT_EQ(capped.plans.size(), 0u);
  EXPECT_NE(capped.summary.find("2 left to the heuristic"), std::string::npos) << capped.summary;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace engine::nn
