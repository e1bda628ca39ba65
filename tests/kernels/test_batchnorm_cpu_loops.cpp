// The CPU batchnorm phases give the same results whichever loops and threads run them: the
// AVX-512 loops (channels a multiple of 16, on CPUs that have it) and the portable ones both
// against the references, and every phase bit-identical on 1, 2 and 3 OpenMP threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <string>
#include <vector>

#include "batchnorm_cpu_ops.h"
#include "kernels/ops.h"
#include "portable_loops.h"

namespace engine {
namespace {

using testing::all_close;
using testing::all_close_scaled;
using testing::BnShape;
using testing::normal_values;
using testing::to_double;
using namespace testing::bn_cpu;

TEST(BatchNormCpu, VectorAndPortableLoopsBothMatchReference) {
  // Channel counts that are multiples of 16 take the AVX-512 loops where the CPU has them;
  // both those and the portable loops must pass on the same inputs. Rows span several
  // 256-row chunks and 64-row blocks with ragged ends; the last shape has mean 1e3, std 1.
  Stream stream;
  const BnShape shapes[] = {{4, 12, 12, 64}, {3, 9, 11, 48}, {2, 7, 7, 512}, {8, 16, 16, 16}};
  for (bool portable : {false, true}) {
    testing::PortableLoops loops(portable);
    for (const BnShape& s : shapes) {
      SCOPED_TRACE(s.str() + (portable ? " portable" : " default"));
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
      batchnorm_normalize(activation(s, x, DType::f32), batch_stats, f32_tensor(affine.weight),
                          f32_tensor(affine.bias), y, stream, epilogue);
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

TEST(BatchNormCpu, EveryPhaseGivesTheSameBitsOnOneTwoAndThreeThreads) {
  // Partial sums per fixed 256-row chunk, merged in chunk order; threads take runs of chunks,
  // which the element-wise passes walk backward: none of it may change a bit with the thread
  // count. Both shapes are above the threading threshold with a ragged last chunk; 48
  // channels take the AVX-512 loops where the CPU has them, 40 the portable ones everywhere.
  Stream stream;
  const BnShape shapes[] = {{4, 17, 15, 48}, {4, 17, 15, 40}};
  for (bool portable : {false, true}) {
    testing::PortableLoops loops(portable);
    for (const BnShape& s : shapes) {
      SCOPED_TRACE(s.str() + (portable ? " portable" : " default"));
      const std::vector<float> x = normal_values(s.numel(), 40, DType::f32, 0.5, 2.0);
      const std::vector<float> dy = normal_values(s.numel(), 41, DType::f32);
      const Affine affine = make_affine(s.c, 42);
      std::vector<std::vector<float>> results;
      const int threads_before = omp_get_max_threads();
      for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        const Tensor tx = activation(s, x, DType::f32);
        std::vector<float> result = stats_of(tx, stream);
        const Tensor batch_stats = batch_stats_from(result, stream);
        Tensor y = Tensor::empty(tx.shape(), DType::f32);
        batchnorm_normalize(tx, batch_stats, f32_tensor(affine.weight), f32_tensor(affine.bias), y,
                            stream);
        const std::vector<float> normalized = y.to_floats(stream);
        const BackwardResult grads = run_backward(s, DType::f32, x, dy, affine.weight, stream);
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

}  // namespace
}  // namespace engine
