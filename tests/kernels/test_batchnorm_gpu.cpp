// The batchnorm phases on a CUDA device against the CPU backend, through the op API: a whole
// training step (stats, fp64 sums, SyncBN-style finalize of two ranks' summed sums, normalize +
// epilogues, eval, backward) for the shapes of the CPU suite and for inputs of mean 1e3, and
// the fp64 phases bit for bit at mean 1e3 and 1e4. Skipped, with the
// reason, when there is no usable CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "batchnorm_cases.h"
#include "gpu_fixture.h"
#include "kernels/ops.h"

namespace engine {
namespace {

using testing::all_close;
using testing::BnShape;
using testing::kBf16Ulp;
using testing::normal_values;

class BatchNormGpu : public testing::GpuOpTest {
 protected:
  // Every phase on `device`, returning [stats, batch_stats, running mean, running var, y
  // (add+relu), y (eval), grad_sums, dx] as floats.
  std::vector<std::vector<float>> run(const BnShape& s, DType dtype, double mean, bool on_gpu) {
    Stream& stream = on_gpu ? gpu_stream() : cpu_stream;
    auto put = [&](const Tensor& t) { return on_gpu ? this->on_gpu(t) : t; };
    const Shape shape = {s.n, s.h, s.w, s.c};
    Tensor x =
        put(Tensor::from_floats(shape, normal_values(s.numel(), 1, dtype, mean, 1.0), dtype));
    Tensor dy = put(Tensor::from_floats(shape, normal_values(s.numel(), 2, dtype), dtype));
    Tensor res = put(Tensor::from_floats(shape, normal_values(s.numel(), 3, dtype), dtype));
    Tensor w = put(Tensor::from_floats({s.c}, normal_values(s.c, 4, DType::f32, 1.0, 0.5)));
    Tensor b = put(Tensor::from_floats({s.c}, normal_values(s.c, 5, DType::f32)));
    Tensor rm = put(Tensor::from_floats({s.c}, std::vector<float>(s.c, 0.f)));
    Tensor rv = put(Tensor::from_floats({s.c}, std::vector<float>(s.c, 1.f)));
    const Device device = x.device();
    Tensor workspace = Tensor::empty({batchnorm_workspace_numel(x)}, DType::f32, device);
    Tensor stats = Tensor::empty({batchnorm_stats_numel(s.c)}, DType::f32, device);
    batchnorm_stats(x, stats, workspace, stream);
    const std::vector<float> one = host_values(stats);
    Tensor sums = Tensor::empty({batchnorm_stats_numel(s.c)}, DType::f64, device);
    batchnorm_stats_to_sums(stats, sums, stream);
    // Two equal "ranks": the sums doubled, as an all-reduce(sum) of two copies gives them.
    std::vector<double> two = sums.to_doubles(stream);
    for (double& v : two)
      v *= 2.0;
    Tensor reduced = put(Tensor::from_doubles({batchnorm_stats_numel(s.c)}, two));
    Tensor batch_stats = Tensor::empty({batchnorm_stats_numel(s.c)}, DType::f32, device);
    batchnorm_finalize_sums(reduced, rm, rv, 0.1f, 1e-5f, batch_stats, stream);
    Tensor y = Tensor::empty(shape, dtype, device);
    BatchNormEpilogue epilogue{res, true};
    batchnorm_normalize(x, batch_stats, w, b, y, stream, epilogue);
    Tensor y_eval = Tensor::empty(shape, dtype, device);
    batchnorm_eval_forward(x, rm, rv, w, b, 1e-5f, y_eval, stream);
    Tensor grad_sums = Tensor::empty({2 * s.c}, DType::f32, device);
    batchnorm_backward_reduce(dy, x, batch_stats, grad_sums, workspace, stream);
    Tensor dx = Tensor::empty(shape, dtype, device);
    batchnorm_backward_elementwise(dy, x, batch_stats, w, grad_sums, dx, stream);
    return {one,
            host_values(batch_stats),
            host_values(rm),
            host_values(rv),
            host_values(y),
            host_values(y_eval),
            host_values(grad_sums),
            host_values(dx)};
  }

  void compare(const BnShape& s, DType dtype, double mean) {
    const auto cpu = run(s, dtype, mean, false);
    const auto gpu = run(s, dtype, mean, true);
    const double act = dtype == DType::f32 ? 1e-5 : kBf16Ulp;
    // Means to fp32 rounding of |mean| + std; variances, invstd and sums relative.
    const double mean_scale = std::abs(mean) + 1.0;
    for (int i : {0, 1}) {
      const std::vector<float>& a = cpu[i];
      const std::vector<float>& b = gpu[i];
      const auto head = [&](const std::vector<float>& v) {
        return std::vector<float>(v.begin(), v.begin() + s.c);
      };
      const auto tail = [&](const std::vector<float>& v) {
        return std::vector<float>(v.begin() + s.c, v.end());
      };
      EXPECT_TRUE(all_close(head(a), head(b), 1e-6, mean_scale)) << "means of part " << i;
      EXPECT_TRUE(all_close(tail(a), tail(b), 1e-5)) << "spread and count of part " << i;
    }
    EXPECT_TRUE(all_close(cpu[2], gpu[2], 1e-6, mean_scale)) << "running_mean";
    EXPECT_TRUE(all_close(cpu[3], gpu[3], 1e-5)) << "running_var";
    EXPECT_TRUE(all_close(cpu[4], gpu[4], act)) << "y";
    EXPECT_TRUE(all_close(cpu[5], gpu[5], act)) << "y_eval";
    EXPECT_TRUE(all_close(cpu[6], gpu[6], 1e-5)) << "grad_sums";
    // dx: for mean 1e3 the fp32 mean's rounding (3e-5 std) dominates fp32's own; bf16's
    // rounding of dx (one ulp where the two land on either side of a tie) still dominates it.
    EXPECT_TRUE(all_close(cpu[7], gpu[7], mean > 10 ? std::max(act, 1e-4) : act)) << "dx";
  }
};

TEST_F(BatchNormGpu, TrainingStepMatchesCpu) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const BnShape& s : testing::kBnShapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str());
      compare(s, dtype, 0.5);
    }
  }
}

TEST_F(BatchNormGpu, LargeMeanMatchesCpu) {
  // 32768 rows: hundreds of partials per channel on the default grid.
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    compare({32, 32, 32, 8}, dtype, 1e3);
  }
}

TEST_F(BatchNormGpu, SumPhasesMatchCpuBitForBit) {
  // The fp64 phases share their arithmetic with the CPU twin (kernels/batchnorm_sums.h), so
  // equal inputs give equal bits: stats -> sums, and (rank-summed) sums -> batch statistics
  // and running statistics, at mean 0.5, 1e3 and 1e4 (std 1), C = 2049 (several blocks).
  const int64_t c = 2049;
  for (double mean : {0.5, 1e3, 1e4}) {
    SCOPED_TRACE("mean " + std::to_string(mean));
    std::vector<float> stats(2 * c + 1);
    const std::vector<float> means = normal_values(c, 11, DType::f32, mean, 1.0);
    const std::vector<float> m2 = normal_values(c, 12, DType::f32, 300.0, 10.0);
    for (int64_t i = 0; i < c; ++i) {
      stats[i] = means[i];
      stats[c + i] = m2[i];
    }
    stats[2 * c] = 299.f;
    Tensor cpu_stats = Tensor::from_floats({2 * c + 1}, stats);
    Tensor cpu_sums = Tensor::empty({2 * c + 1}, DType::f64);
    Tensor gpu_sums = Tensor::empty({2 * c + 1}, DType::f64, gpu);
    batchnorm_stats_to_sums(cpu_stats, cpu_sums, cpu_stream);
    batchnorm_stats_to_sums(on_gpu(cpu_stats), gpu_sums, gpu_stream());
    const std::vector<double> sums = cpu_sums.to_doubles(cpu_stream);
    EXPECT_EQ(sums, gpu_sums.to_doubles(gpu_stream())) << "stats_to_sums";

    // Three ranks' worth of sums, as an all-reduce would leave them.
    std::vector<double> reduced(sums);
    for (size_t i = 0; i < reduced.size(); ++i)
      reduced[i] = sums[i] + 0.5 * sums[i] + sums[i];
    Tensor cpu_reduced = Tensor::from_doubles({2 * c + 1}, reduced);
    Tensor cpu_rm = Tensor::from_floats({c}, normal_values(c, 13, DType::f32));
    Tensor cpu_rv = Tensor::from_floats({c}, std::vector<float>(c, 1.5f));
    Tensor gpu_rm = on_gpu(cpu_rm), gpu_rv = on_gpu(cpu_rv);
    Tensor cpu_batch = Tensor::empty({2 * c + 1}, DType::f32);
    Tensor gpu_batch = Tensor::empty({2 * c + 1}, DType::f32, gpu);
    batchnorm_finalize_sums(cpu_reduced, cpu_rm, cpu_rv, 0.1f, 1e-5f, cpu_batch, cpu_stream);
    batchnorm_finalize_sums(on_gpu(cpu_reduced), gpu_rm, gpu_rv, 0.1f, 1e-5f, gpu_batch,
                            gpu_stream());
    EXPECT_EQ(host_values(cpu_batch), host_values(gpu_batch)) << "batch_stats";
    EXPECT_EQ(host_values(cpu_rm), host_values(gpu_rm)) << "running_mean";
    EXPECT_EQ(host_values(cpu_rv), host_values(gpu_rv)) << "running_var";
  }
}

}  // namespace
}  // namespace engine
