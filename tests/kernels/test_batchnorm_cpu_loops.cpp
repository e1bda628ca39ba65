// The CPU batchnorm phases give the same results whichever loops and threads run them: the
// AVX-512 loops (channels a multiple of 16, on CPUs that have it), the portable loops compiled
// for AVX2 and for baseline x86-64, each against the references, and every phase bit-identical on
// 1, 2 and 3 OpenMP threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <string>
#include <utility>
#include <vector>

#include "batchnorm_cpu_ops.h"
#include "kernels/ops.h"
#include "portable_loops.h"

namespace engine {
namespace {

// Every vector level this CPU offers, widest first, with its name.
std::vector<std::pair<cpu::VectorIsa, const char*>> vector_levels() {
  std::vector<std::pair<cpu::VectorIsa, const char*>> levels;
  if (cpu::cpu_has_avx512()) levels.emplace_back(cpu::VectorIsa::kAvx512, "avx512");
  if (cpu::cpu_has_avx2()) levels.emplace_back(cpu::VectorIsa::kAvx2, "avx2");
  levels.emplace_back(cpu::VectorIsa::kBaseline, "baseline");
  return levels;
}

using testing::all_close;
using testing::all_close_scaled;
using testing::BnShape;
using testing::normal_values;
using testing::to_double;
using namespace testing::bn_cpu;

TEST(BatchNormCpu, VectorAndPortableLoopsBothMatchReference) {
  // Channel counts that are multiples of 16 take the AVX-512 loops where the CPU has them;
  // those, the AVX2 and the baseline loops must all pass on the same inputs. Rows span several
  // 256-row chunks and 64-row blocks with ragged ends; the last shape has mean 1e3, std 1.
  Stream stream;
  const BnShape shapes[] = {{4, 12, 12, 64}, {3, 9, 11, 48}, {2, 7, 7, 512}, {8, 16, 16, 16}};
  for (const auto& [level, level_name] : vector_levels()) {
    testing::CappedVectorIsa loops(level);
    for (const BnShape& s : shapes) {
      SCOPED_TRACE(s.str() + " " + level_name);
      const double mean = s.c == 16 ? 1e3 : 0.5;
      const std::vector<float> x = normal_values(s.numel(), 30, DType::f32, mean, 2.0);
      const std::vector<float> dy = normal_values(s.numel(), 31, DType::f32);
      const std::vector<float> res = normal_values(s.numel(), 32, DType::f32);
      const Affine affine = make_affine(s.c, 33);
      const testing::ReferenceStats ref = testing::reference_stats(x, s.rows(), s.c);

      const std::vector<float> stats = stats_of(activation(s, x, DType::f32), stream);
      // fp32 of the data's scale (as StatsAndFinalizeMatchReference); 1e-4 std at mean 1e3.
      EXPECT_TRUE(all_close(ref.mean, slice(stats, 0, s.c), mean > 1.0 ? 1e-7 : 1e-6, mean + 2.0));
      EXPECT_TRUE(m2_matches(ref, stats, s));

      const Tensor batch_stats = batch_stats_from(stats, stream);
      BatchNormEpilogue epilogue;
      epilogue.relu = true;
      epilogue.residual = activation(s, res, DType::f32);
      Tensor y = Tensor::empty({s.n, s.h, s.w, s.c}, DType::f32);
      batchnorm_normalize({.x = activation(s, x, DType::f32),
                           .batch_stats = batch_stats,
                           .weight = f32_tensor(affine.weight),
                           .bias = f32_tensor(affine.bias),
                           .y = y},
                          stream, epilogue);
      EXPECT_TRUE(all_close(testing::reference_bn_apply(to_double(x), ref.mean, ref.var, kEps,
                                                        affine.weight, affine.bias, &res, true),
                            y.to_floats(stream), mean > 1.0 ? 1e-4 : 1e-5));

      const BackwardResult got = run_backward(s, DType::f32, x, dy, affine.weight, stream);
      const testing::ReferenceBnGrads grads =
          testing::reference_bn_backward(x, dy, s.c, kEps, affine.weight);
      EXPECT_TRUE(all_close_scaled(grads.dx, got.dx, mean > 1.0 ? 1e-4 : 1e-5,
                                   term_scales(s, x, dy, affine.weight)));
      EXPECT_TRUE(all_close(grads.dbias, slice(got.grad_sums, 0, s.c), 1e-5));
      EXPECT_TRUE(
          all_close(grads.dweight, slice(got.grad_sums, s.c, s.c), mean > 1.0 ? 3e-4 : 1e-5));
    }
  }
}

TEST(BatchNormCpu, Bf16VectorAndPortableLoopsBothMatchReference) {
  // bf16 activations: the AVX-512 loops widen them on load and round once on store, as the
  // portable loops do. On bf16-exact inputs the statistics and grad_sums are fp32 sums of
  // exact values (the f32 tolerances); y and dx round once to bf16, so each is within one bf16
  // unit of the fp64 reference (dx relative to its terms, which nearly cancel), and the two
  // loops' outputs are within one unit of each other.
  Stream stream;
  const BnShape shapes[] = {{4, 12, 12, 64}, {3, 9, 11, 48}, {2, 7, 7, 512}};
  for (const BnShape& s : shapes) {
    SCOPED_TRACE(s.str());
    const std::vector<float> x = normal_values(s.numel(), 50, DType::bf16, 0.5, 2.0);
    const std::vector<float> dy = normal_values(s.numel(), 51, DType::bf16);
    const std::vector<float> res = normal_values(s.numel(), 52, DType::bf16);
    const Affine affine = make_affine(s.c, 53);
    const testing::ReferenceStats ref = testing::reference_stats(x, s.rows(), s.c);
    const testing::ReferenceBnGrads grads =
        testing::reference_bn_backward(x, dy, s.c, kEps, affine.weight);
    const std::vector<double> expected_y = testing::reference_bn_apply(
        to_double(x), ref.mean, ref.var, kEps, affine.weight, affine.bias, &res, true);
    std::vector<std::vector<float>> ys, dxs;
    for (const auto& [level, level_name] : vector_levels()) {
      SCOPED_TRACE(level_name);
      testing::CappedVectorIsa loops(level);
      const std::vector<float> stats = stats_of(activation(s, x, DType::bf16), stream);
      EXPECT_TRUE(all_close(ref.mean, slice(stats, 0, s.c), 1e-6, 2.5));
      EXPECT_TRUE(m2_matches(ref, stats, s));

      BatchNormEpilogue epilogue;
      epilogue.relu = true;
      epilogue.residual = activation(s, res, DType::bf16);
      Tensor y = Tensor::empty({s.n, s.h, s.w, s.c}, DType::bf16);
      batchnorm_normalize({.x = activation(s, x, DType::bf16),
                           .batch_stats = batch_stats_from(stats, stream),
                           .weight = f32_tensor(affine.weight),
                           .bias = f32_tensor(affine.bias),
                           .y = y},
                          stream, epilogue);
      ys.push_back(y.to_floats(stream));
      EXPECT_TRUE(all_close_scaled(expected_y, ys.back(), testing::kBf16Ulp,
                                   std::vector<double>(expected_y.size(), 0.0)));

      const BackwardResult got = run_backward(s, DType::bf16, x, dy, affine.weight, stream);
      dxs.push_back(got.dx);
      EXPECT_TRUE(all_close_scaled(grads.dx, got.dx, testing::kBf16Ulp,
                                   term_scales(s, x, dy, affine.weight)));
      EXPECT_TRUE(all_close(grads.dbias, slice(got.grad_sums, 0, s.c), 1e-5));
      EXPECT_TRUE(all_close(grads.dweight, slice(got.grad_sums, s.c, s.c), 1e-5));
    }
    EXPECT_TRUE(
        all_close_scaled(ys[1], ys[0], testing::kBf16Ulp, std::vector<double>(ys[0].size(), 0.0)));
    EXPECT_TRUE(
        all_close_scaled(dxs[1], dxs[0], testing::kBf16Ulp, term_scales(s, x, dy, affine.weight)));
  }
}

TEST(BatchNormCpu, EveryPhaseGivesTheSameBitsOnOneTwoAndThreeThreads) {
  // Partial sums per fixed 256-row chunk, merged in chunk order; threads take runs of chunks,
  // which the element-wise passes walk backward: none of it may change a bit with the thread
  // count. Both shapes are above the threading threshold with a ragged last chunk; 48
  // channels take the AVX-512 loops where the CPU has them, 40 the AVX2 or baseline ones.
  Stream stream;
  const BnShape shapes[] = {{4, 17, 15, 48}, {4, 17, 15, 40}};
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const auto& [level, level_name] : vector_levels()) {
      testing::CappedVectorIsa loops(level);
      for (const BnShape& s : shapes) {
        SCOPED_TRACE(s.str() + " " + level_name + " " + std::string(dtype_name(dtype)));
        const std::vector<float> x = normal_values(s.numel(), 40, dtype, 0.5, 2.0);
        const std::vector<float> dy = normal_values(s.numel(), 41, dtype);
        const Affine affine = make_affine(s.c, 42);
        std::vector<std::vector<float>> results;
        const int threads_before = omp_get_max_threads();
        for (int threads : {1, 2, 3}) {
          omp_set_num_threads(threads);
          const Tensor tx = activation(s, x, dtype);
          std::vector<float> result = stats_of(tx, stream);
          const Tensor batch_stats = batch_stats_from(result, stream);
          Tensor y = Tensor::empty(tx.shape(), dtype);
          batchnorm_normalize({.x = tx,
                               .batch_stats = batch_stats,
                               .weight = f32_tensor(affine.weight),
                               .bias = f32_tensor(affine.bias),
                               .y = y},
                              stream);
          const std::vector<float> normalized = y.to_floats(stream);
          const BackwardResult grads = run_backward(s, dtype, x, dy, affine.weight, stream);
          for (const std::vector<float>* part : {&normalized, &grads.dx, &grads.grad_sums})
            result.insert(result.end(), part->begin(), part->end());
          results.push_back(result);
        }
        omp_set_num_threads(threads_before);
        EXPECT_TRUE(results[0] == results[1]) << "1 and 2 threads differ";
        EXPECT_TRUE(results[0] == results[2]) << "1 and 3 threads differ";
      }
    }
  }
}

}  // namespace
}  // namespace engine
