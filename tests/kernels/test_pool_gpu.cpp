// The pooling ops on a CUDA device against the CPU backend, through the op API. Skipped,
// with the reason, when there is no usable CUDA device.
#include <gtest/gtest.h>

#include <string>

#include "close_values.h"
#include "gpu_fixture.h"
#include "kernels/ops.h"
#include "pool_cases.h"

namespace engine {
namespace {

using testing::all_close;
using testing::PoolShape;
using testing::Window;

class PoolGpu : public testing::GpuOpTest {};

TEST_F(PoolGpu, MaxAndAveragePoolingMatchCpu) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const Window& win : testing::kWindows) {
      for (const PoolShape& s : testing::kPoolShapes) {
        const int64_t oh = testing::pooled(s.h, win), ow = testing::pooled(s.w, win);
        if (oh < 1 || ow < 1) continue;
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " " + win.str());
        const MaxPool2dParams params{win.kernel, win.stride, win.padding};
        const Shape in = {s.n, s.h, s.w, s.c}, out = {s.n, oh, ow, s.c};
        Tensor x = Tensor::from_floats(in, testing::normal_values(s.numel(), 1, dtype), dtype);
        Tensor dy =
            Tensor::from_floats(out, testing::normal_values(shape_numel(out), 2, dtype), dtype);
        std::vector<std::vector<float>> results[2];
        for (int side = 0; side < 2; ++side) {
          const bool gpu_side = side == 1;
          Stream& stream = gpu_side ? gpu_stream() : cpu_stream;
          const Device device = gpu_side ? gpu : Device::cpu();
          Tensor tx = gpu_side ? on_gpu(x) : x, tdy = gpu_side ? on_gpu(dy) : dy;
          Tensor y = Tensor::empty(out, dtype, device),
                 argmax = Tensor::empty(out, DType::i32, device);
          Tensor dx = Tensor::empty(in, dtype, device),
                 avg = Tensor::empty({s.n, s.c}, dtype, device);
          Tensor avg_dx = Tensor::empty(in, dtype, device);
          maxpool2d_forward(params, tx, y, argmax, stream);
          maxpool2d_backward(params, tdy, argmax, dx, stream);
          global_avgpool_forward(tx, avg, stream);
          global_avgpool_backward(avg, avg_dx, stream);
          results[side] = {host_values(y), host_values(argmax), host_values(dx), host_values(avg),
                           host_values(avg_dx)};
        }
        const double avg_rel = dtype == DType::f32 ? 1e-6 : testing::kBf16Ulp;
        EXPECT_TRUE(all_close(results[0][0], results[1][0], 0.0, 0.0)) << "y";
        EXPECT_TRUE(all_close(results[0][1], results[1][1], 0.0, 0.0)) << "argmax";
        EXPECT_TRUE(all_close(results[0][2], results[1][2], 0.0, 0.0)) << "dx";
        EXPECT_TRUE(all_close(results[0][3], results[1][3], avg_rel)) << "avg";
        EXPECT_TRUE(all_close(results[0][4], results[1][4], avg_rel)) << "avg dx";
      }
    }
  }
}

}  // namespace
}  // namespace engine
