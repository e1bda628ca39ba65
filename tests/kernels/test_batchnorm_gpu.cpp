// The batchnorm phases on a CUDA device against the CPU backend, through the op API: a whole
// training step (stats, SyncBN-style finalize of two parts, normalize + epilogues, eval,
// backward) for the shapes of the CPU suite and for inputs of mean 1e3. Skipped, with the
// reason, when there is no usable CUDA device.
#include <gtest/gtest.h>

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
    // Two equal "ranks": stats gathered twice.
    const std::vector<float> one = host_values(stats);
    std::vector<float> two = one;
    two.insert(two.end(), one.begin(), one.end());
    Tensor gathered = put(Tensor::from_floats({2, batchnorm_stats_numel(s.c)}, two));
    Tensor batch_stats = Tensor::empty({batchnorm_stats_numel(s.c)}, DType::f32, device);
    batchnorm_finalize(gathered, rm, rv, 0.1f, 1e-5f, batch_stats, stream);
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
    // dx: for mean 1e3 the fp32 mean's rounding (3e-5 std) dominates.
    EXPECT_TRUE(all_close(cpu[7], gpu[7], mean > 10 ? 1e-4 : act)) << "dx";
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

}  // namespace
}  // namespace engine
