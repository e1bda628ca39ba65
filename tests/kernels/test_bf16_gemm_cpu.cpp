// The CPU's bf16 GEMM (kernels/cpu/bf16_gemm.h) on each way this CPU offers (AMX tiles,
// AVX512_BF16), against a double-precision product of the same bf16 values: a bf16 product
// is exact in fp32, so the only error allowed is the fp32 accumulation's, (k + 1) units of
// 2^-24 of the sum of |a b|, and for a bf16 C its one rounding. Edges of every blocking:
// 12- and 32-row kernels, 256-row blocks, 32-column panels, 32-deep AMX steps and their
// partial last step; both B layouts; runs with gaps; scattered C rows; bias and beta; the
// same bits on one and two threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/isa.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace engine::cpu {
namespace {

std::vector<bf16> random_bf16(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-2.f, 2.f);
  std::vector<bf16> values(static_cast<size_t>(count));
  for (bf16& v : values)
    v = bf16(uniform(rng));
  return values;
}

double value(bf16 v) {
  return static_cast<float>(v);
}

std::vector<Bf16Products> ways_here() {
  std::vector<Bf16Products> ways;
  if (cpu_has_amx_bf16()) ways.push_back(Bf16Products::kAmx);
  if (cpu_has_avx512_bf16()) ways.push_back(Bf16Products::kAvx512Bf16);
  return ways;
}

#define SKIP_WITHOUT_BF16_KERNELS()                                                 \
  if (ways_here().empty()) {                                                        \
    GTEST_SKIP() << "this CPU has neither AMX-BF16 nor AVX512_BF16 (bf16 products " \
                    "are widened to fp32 here)";                                    \
  }

// The default way per kind of CPU, and a requested way only where the CPU has it.
TEST(Bf16GemmCpu, WayFollowsTheHardwareAndTheRequest) {
  const Bf16Hardware amx_xeon{.avx512 = true, .avx512_bf16 = true, .amx_bf16 = true};
  const Bf16Hardware cooper_lake{.avx512 = true, .avx512_bf16 = true};
  const Bf16Hardware zen4{.avx512 = true, .avx512_bf16 = true, .amd = true};
  const Bf16Hardware avx2_epyc{.amd = true};
  const Bf16Hardware portable_forced{.avx512_bf16 = true, .amx_bf16 = true};
  EXPECT_EQ(choose_bf16_products(std::nullopt, amx_xeon), Bf16Products::kAmx);
  EXPECT_EQ(choose_bf16_products(std::nullopt, cooper_lake), Bf16Products::kWidened);
  EXPECT_EQ(choose_bf16_products(std::nullopt, zen4), Bf16Products::kAvx512Bf16);
  EXPECT_EQ(choose_bf16_products(std::nullopt, avx2_epyc), Bf16Products::kWidened);
  EXPECT_EQ(choose_bf16_products(std::nullopt, portable_forced), Bf16Products::kWidened);
  EXPECT_EQ(choose_bf16_products(Bf16Products::kAvx512Bf16, amx_xeon), Bf16Products::kAvx512Bf16);
  EXPECT_EQ(choose_bf16_products(Bf16Products::kAvx512Bf16, cooper_lake),
            Bf16Products::kAvx512Bf16);
  EXPECT_EQ(choose_bf16_products(Bf16Products::kWidened, zen4), Bf16Products::kWidened);
  EXPECT_EQ(choose_bf16_products(Bf16Products::kAmx, zen4), Bf16Products::kWidened);
  EXPECT_EQ(choose_bf16_products(Bf16Products::kAvx512Bf16, avx2_epyc), Bf16Products::kWidened);
  EXPECT_EQ(choose_bf16_products(Bf16Products::kAmx, portable_forced), Bf16Products::kWidened);
}

// A product to check: A [m x lda] (row-major), B either row-major [k x ldb] or its columns
// contiguous ([n x ldb]), over `runs`.
struct Case {
  int64_t m, n, k;
  bool b_columns_contiguous = false;
  std::vector<DepthRun> runs;  // empty: the whole depth
  // B packed only in these groups of rows (RowGroups) when group_rows > 0; the runs read no
  // others. B given as a vector of row pointers when rows_given (row-major B only).
  int64_t group_rows = 0;
  std::vector<bool> groups_read = {};
  bool rows_given = false;
};

struct Checked {
  double worst_ratio = 0;  // |error| / allowed, the largest over C
};

Checked check(Bf16Products way, const Case& test, bool c_is_bf16, float beta, bool with_bias,
              bool scattered_rows) {
  SCOPED_TRACE(::testing::Message()
               << bf16_products_name(way) << " m=" << test.m << " n=" << test.n << " k=" << test.k
               << " b_columns=" << test.b_columns_contiguous << " runs=" << test.runs.size()
               << " bf16_c=" << c_is_bf16 << " beta=" << beta << " bias=" << with_bias
               << " scattered=" << scattered_rows);
  const std::vector<DepthRun> runs =
      test.runs.empty() ? std::vector<DepthRun>{{0, 0, test.k}} : test.runs;
  int64_t a_width = 0;
  for (const DepthRun& run : runs)
    a_width = std::max(a_width, run.a_begin + run.length);
  const int64_t lda = a_width + 2, ldb = (test.b_columns_contiguous ? test.k : test.n) + 2;
  const auto a = random_bf16(test.m * lda, 1);
  auto b = random_bf16((test.b_columns_contiguous ? test.n : test.k) * ldb, 2);
  const auto b_at = [&](int64_t p, int64_t j) {
    return value(test.b_columns_contiguous ? b[j * ldb + p] : b[p * ldb + j]);
  };
  std::vector<float> bias(static_cast<size_t>(test.n));
  for (int64_t j = 0; j < test.n; ++j)
    bias[j] = 0.25f * static_cast<float>(j % 7) - 0.5f;
  // C rows in reverse order, ldc wider than n, when scattered.
  const int64_t ldc = test.n + 3;
  std::vector<int64_t> c_rows(static_cast<size_t>(test.m));
  for (int64_t i = 0; i < test.m; ++i)
    c_rows[i] = (scattered_rows ? test.m - 1 - i : i) * ldc;
  std::vector<float> c_f32(static_cast<size_t>(test.m * ldc));
  for (size_t i = 0; i < c_f32.size(); ++i)
    c_f32[i] = 0.125f * static_cast<float>(i % 11) - 0.5f;
  std::vector<bf16> c_b16(c_f32.size(), bf16(3.f));
  const std::vector<float> c_before = c_f32;
  RowGroups packed_rows;
  if (test.group_rows > 0) {
    packed_rows = {test.group_rows, &test.groups_read};
    // B's rows in the groups not read are NaN, so that a product reading one fails; and the
    // packing's storage first holds a pack of NaNs (the thread's kept scratch, which the next
    // pack of this size reuses), so that a read row left unpacked fails too.
    for (int64_t p = 0; p < test.k; ++p) {
      if (test.groups_read[p / test.group_rows]) continue;
      for (int64_t j = 0; j < test.n; ++j)
        b[test.b_columns_contiguous ? j * ldb + p : p * ldb + j] = bf16(NAN);
    }
    const std::vector<bf16> nans(static_cast<size_t>(test.n * test.k), bf16(NAN));
    const PackedPairsB stale(test.n, test.k, nans.data(), 1, test.k);
  }
  std::vector<const bf16*> b_rows;
  for (int64_t p = 0; test.rows_given && p < test.k; ++p)
    b_rows.push_back(b.data() + p * ldb);
  const PackedPairsB packed = test.rows_given ? PackedPairsB(test.n, b_rows, packed_rows)
                              : test.b_columns_contiguous
                                  ? PackedPairsB(test.n, test.k, b.data(), 1, ldb, packed_rows)
                                  : PackedPairsB(test.n, test.k, b.data(), ldb, 1, packed_rows);
  Bf16GemmOutput out;
  out.c = c_is_bf16 ? static_cast<void*>(c_b16.data()) : c_f32.data();
  out.c_is_bf16 = c_is_bf16;
  out.c_rows = c_rows.data();
  out.beta = beta;
  out.bias = with_bias ? bias.data() : nullptr;
  bf16_gemm_packed_runs(way, test.m, a.data(), lda, packed, runs, out);
  Checked result;
  for (int64_t i = 0; i < test.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const int64_t at = c_rows[i] + j;
      if (j >= test.n) {  // beyond n: never written
        if (c_is_bf16) {
          EXPECT_EQ(c_b16[at].bits, bf16(3.f).bits) << "column " << j << " of row " << i;
        } else {
          EXPECT_EQ(c_f32[at], c_before[at]) << "column " << j << " of row " << i;
        }
        continue;
      }
      double sum = 0, magnitude = 0;
      for (const DepthRun& run : runs) {
        for (int64_t p = 0; p < run.length; ++p) {
          const double product = value(a[i * lda + run.a_begin + p]) * b_at(run.b_begin + p, j);
          sum += product;
          magnitude += std::abs(product);
        }
      }
      if (with_bias) sum += bias[j];
      if (!c_is_bf16) sum += beta * c_before[at];
      const double got = c_is_bf16 ? value(c_b16[at]) : c_f32[at];
      double allowed = (test.k + 2) * std::ldexp(magnitude + std::abs(sum) + 1.0, -24);
      if (c_is_bf16) allowed += std::ldexp(std::abs(sum), -8);
      result.worst_ratio = std::max(result.worst_ratio, std::abs(got - sum) / allowed);
      if (!(std::abs(got - sum) <= allowed)) {  // NaN fails too
        ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", expected " << sum
                      << " within " << allowed;
        return result;
      }
    }
  }
  return result;
}

TEST(Bf16GemmCpu, EveryEdgeOfTheBlockingAgainstDouble) {
  SKIP_WITHOUT_BF16_KERNELS();
  for (Bf16Products way : ways_here()) {
    double worst = 0;
    // Every row count of the last AVX512_BF16 kernel (1-12) and of AMX's copied tail.
    for (int64_t m : {1, 2, 3, 6, 10, 11, 12, 13, 31, 32, 33, 257, 300}) {
      for (int64_t n : {1, 16, 31, 32, 33, 70}) {
        for (int64_t k : {2, 30, 32, 34, 64, 98, 576}) {
          for (bool columns : {false, true})
            worst = std::max(
                worst, check(way, {m, n, k, columns, {}}, false, 0.f, false, false).worst_ratio);
        }
      }
    }
    // Odd k: B's last pair row is half zero, and the one run is paired only if k is even.
    std::printf("%s: worst error %.3f of allowed\n", bf16_products_name(way), worst);
    EXPECT_GT(worst, 0.0) << "the check can fail: some error is measured";
  }
}

TEST(Bf16GemmCpu, OutputsBiasBetaAndScatteredRows) {
  SKIP_WITHOUT_BF16_KERNELS();
  for (Bf16Products way : ways_here()) {
    for (bool scattered : {false, true}) {
      check(way, {45, 70, 96, false, {}}, true, 0.f, false, scattered);
      check(way, {45, 70, 96, true, {}}, true, 0.f, true, scattered);
      check(way, {45, 70, 96, false, {}}, false, 1.f, false, scattered);
      check(way, {45, 70, 96, true, {}}, false, 0.5f, true, scattered);
    }
  }
}

TEST(Bf16GemmCpu, RunsWithGapsAndPartialSteps) {
  SKIP_WITHOUT_BF16_KERNELS();
  // A's columns [a_begin, +length) times B's rows [b_begin, +length): as a convolution's tap
  // classes use it (64-deep taps), and with lengths that leave a partial 32-deep AMX step.
  const std::vector<DepthRun> taps = {{0, 64, 128}, {128, 256, 64}, {192, 448, 64}};
  const std::vector<DepthRun> ragged = {{0, 2, 6}, {6, 40, 34}, {40, 100, 2}, {42, 102, 60}};
  for (Bf16Products way : ways_here()) {
    for (int64_t m : {13, 40, 300}) {
      check(way, {m, 64, 576, false, taps}, true, 0.f, false, true);
      check(way, {m, 33, 576, true, taps}, false, 0.f, false, false);
      check(way, {m, 40, 170, false, ragged}, false, 1.f, false, false);
      check(way, {m, 40, 170, true, ragged}, true, 0.f, true, true);
    }
  }
}

// The runs over the groups of `group_rows` rows that `read` marks, one run a group.
std::vector<DepthRun> runs_over(const std::vector<bool>& read, int64_t group_rows) {
  std::vector<DepthRun> runs;
  int64_t a_begin = 0;
  for (size_t group = 0; group < read.size(); ++group) {
    if (!read[group]) continue;
    runs.push_back({a_begin, static_cast<int64_t>(group) * group_rows, group_rows});
    a_begin += group_rows;
  }
  return runs;
}

TEST(Bf16GemmCpu, ProductsOverTheRowGroupsPackedAlone) {
  SKIP_WITHOUT_BF16_KERNELS();
  // A convolution's taps as groups (64 rows, 9 taps, the centre one read as on a 1x1 map; 4
  // of them as under a stride); groups of 6 rows, less than the 32 rows a transposed block
  // packs, so that blocks mix read and unread groups.
  const std::vector<bool> centre = {false, false, false, false, true, false, false, false, false};
  const std::vector<bool> corner = {false, false, false, false, true, true, false, true, true};
  const std::vector<bool> mixed = {true, false, false, true,  false, false,
                                   true, true,  false, false, false, true};
  for (Bf16Products way : ways_here()) {
    for (int64_t m : {13, 64, 300}) {
      for (int columns = 0; columns < 3; ++columns) {
        const bool contiguous = columns == 1, rows_given = columns == 2;
        for (const auto& [group_rows, read] :
             {std::pair{int64_t{64}, centre}, std::pair{int64_t{64}, corner},
              std::pair{int64_t{6}, mixed}}) {
          const int64_t k = group_rows * static_cast<int64_t>(read.size());
          for (int64_t n : {32, 70}) {
            check(way,
                  {m, n, k, contiguous, runs_over(read, group_rows), group_rows, read, rows_given},
                  true, 0.f, true, false);
          }
        }
      }
    }
  }
}

// Rows outside the groups read are not packed at all (the saving): their pair rows still hold
// the NaNs an earlier pack left in the same scratch, where the read groups' pair rows are the
// whole pack's, bit for bit. Groups of 32 rows (a transposed block of 16 pair rows each).
TEST(Bf16GemmCpu, RowGroupsNotReadAreLeftUnpacked) {
  const int64_t n = 64, k = 192, group_rows = 32;
  const std::vector<bool> read = {false, true, false, false, true, false};
  const std::vector<bf16> b = random_bf16(n * k, 3), nans(b.size(), bf16(NAN));
  std::vector<const bf16*> b_rows;
  for (int64_t p = 0; p < k; ++p)
    b_rows.push_back(b.data() + p * n);
  for (int layout = 0; layout < 3; ++layout) {
    SCOPED_TRACE(::testing::Message() << "layout " << layout);
    const auto pack = [&](const RowGroups& rows) {
      { const PackedPairsB stale(n, k, nans.data(), 1, k); }
      const PackedPairsB packed = layout == 0   ? PackedPairsB(n, k, b.data(), n, 1, rows)
                                  : layout == 1 ? PackedPairsB(n, k, b.data(), 1, k, rows)
                                                : PackedPairsB(n, b_rows, rows);
      const PairPanels panels = packed.panels();
      return std::vector<uint16_t>(panels.data, panels.data + pair_panels_values(n, k));
    };
    // Layouts: B row-major, B's columns contiguous (b read as [n x k]), B's rows given.
    const std::vector<uint16_t> grouped = pack({group_rows, &read});
    const std::vector<uint16_t> whole = pack({});
    const int64_t pair_rows = k / 2;
    int64_t unpacked = 0;
    for (int64_t panel = 0; panel < n / kBf16PanelColumns; ++panel) {
      for (int64_t q = 0; q < pair_rows; ++q) {
        for (int64_t v = 0; v < 64; ++v) {
          const size_t at = static_cast<size_t>((panel * pair_rows + q) * 64 + v);
          if (read[2 * q / group_rows]) {
            ASSERT_EQ(grouped[at], whole[at]) << "panel " << panel << " pair row " << q;
          } else {
            ASSERT_EQ(grouped[at], bf16(NAN).bits) << "panel " << panel << " pair row " << q;
            ++unpacked;
          }
        }
      }
    }
    EXPECT_EQ(unpacked, 2 * 4 * 16 * 64);  // 2 panels x 4 groups x 16 pair rows x 64 values
  }
}

TEST(Bf16GemmCpu, RowGroupsSplittingAPairOrShortOfKAreRefused) {
  const std::vector<bf16> b = random_bf16(32 * 64, 4);
  const std::vector<bool> two = {true, false};
  EXPECT_THROW(PackedPairsB(32, 64, b.data(), 32, 1, {31, &two}), std::invalid_argument);
  EXPECT_THROW(PackedPairsB(32, 66, b.data(), 32, 1, {32, &two}), std::invalid_argument);
  EXPECT_NO_THROW(PackedPairsB(32, 64, b.data(), 32, 1, {32, &two}));
}

TEST(Bf16GemmCpu, UnpairedRunsAreRefused) {
  EXPECT_TRUE(bf16_runs_are_paired({{0, 0, 64}, {64, 128, 2}}));
  EXPECT_FALSE(bf16_runs_are_paired({{0, 1, 64}}));
  EXPECT_FALSE(bf16_runs_are_paired({{0, 0, 63}}));
}

TEST(Bf16GemmCpu, SameBitsOnOneAndTwoThreads) {
  SKIP_WITHOUT_BF16_KERNELS();
#if defined(_OPENMP)
  const int64_t m = 517, n = 96, k = 320;
  const auto a = random_bf16(m * k, 5), b = random_bf16(n * k, 6);
  for (Bf16Products way : ways_here()) {
    std::vector<std::vector<bf16>> results;
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      std::vector<bf16> c(static_cast<size_t>(m * n));
      Bf16GemmOutput out;
      out.c = c.data();
      out.c_is_bf16 = true;
      out.ldc = n;
      bf16_gemm(way, m, n, k, a.data(), k, b.data(), 1, k, out);
      results.push_back(c);
    }
    omp_set_num_threads(2);
    for (size_t r = 1; r < results.size(); ++r) {
      EXPECT_EQ(std::memcmp(results[0].data(), results[r].data(), results[0].size() * 2), 0)
          << bf16_products_name(way) << ": " << r + 1 << " threads";
    }
  }
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

}  // namespace
}  // namespace engine::cpu
