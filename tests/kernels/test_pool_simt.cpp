// The CUDA pooling kernels through their launchers under the SIMT emulator, against the CPU
// twins: max pooling (values and argmax bit for bit, ties and NaN), its gathering backward,
// and global average pooling (vector and scalar channel paths), with default and small grids,
// and max pooling also an image per launch.
#include "sim/simt/simt.h"
// The kernels under test, compiled here by g++ for the emulator.
#include "kernels/cuda/pool.cuh"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "close_values.h"
#include "kernels/cpu/pool.h"
#include "kernels/error.h"
#include "pool_cases.h"
#include "simt_buffer.h"
#include "tests/dtype_bytes.h"
#include "tests/error_text.h"

namespace engine {
namespace {

using testing::all_close;
using testing::kBf16Ulp;
using testing::PoolShape;
using testing::SimtBuffer;
using testing::Window;

using testing::kDTypes;
// Max pooling's geometries: each grid over all the images at once, and the small grid one
// image per launch (as a batch of over 2^31 elements is launched).
struct PoolGeometry {
  cuda::ElementwiseLaunch grid;
  bool image_per_launch = false;
  std::string str() const {
    return "max_blocks " + std::to_string(grid.max_blocks) +
           (image_per_launch ? ", an image per launch" : "");
  }
};
const PoolGeometry kPoolGeometries[] = {{{256, 2048}}, {{64, 2}}, {{64, 2}, true}};

TEST(PoolSimt, MaxPoolForwardBackwardMatchCpu) {
  for (DType dtype : kDTypes) {
    for (const Window& win : testing::kWindows) {
      for (const PoolShape& s : testing::kPoolShapes) {
        const int64_t oh = testing::pooled(s.h, win), ow = testing::pooled(s.w, win);
        if (oh < 1 || ow < 1) continue;
        for (const PoolGeometry& geometry : kPoolGeometries) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " " + win.str() + " " +
                       geometry.str());
          const int64_t out_numel = s.n * oh * ow * s.c;
          std::vector<float> x = testing::normal_values(s.numel(), 1, dtype);
          x[s.numel() / 2] = NAN;
          const std::vector<float> dy = testing::normal_values(out_numel, 2, dtype);
          SimtBuffer dx_in(dtype, x), y(dtype, std::vector<float>(out_numel, 7.f));
          SimtBuffer argmax = SimtBuffer::i32(out_numel);
          SimtBuffer cpu_y(dtype, std::vector<float>(out_numel));
          std::vector<int32_t> cpu_argmax(out_numel);
          const MaxPool2dWindow window{
              .n = s.n,
              .h = s.h,
              .w = s.w,
              .c = s.c,
              .params = {.kernel = win.kernel, .stride = win.stride, .padding = win.padding}};
          cuda::PoolLaunch grid{geometry.grid};
          if (geometry.image_per_launch)
            grid.max_launch_elements = cuda::maxpool_image_elements(window);
          cpu::maxpool2d_forward({.dtype = dtype,
                                  .x = dx_in.data(),
                                  .y = cpu_y.data(),
                                  .argmax = cpu_argmax.data(),
                                  .window = window});
          cuda::maxpool2d_forward({.dtype = dtype,
                                   .x = dx_in.data(),
                                   .y = y.data(),
                                   .argmax = argmax.ints(),
                                   .window = window},
                                  nullptr, grid);
          EXPECT_TRUE(all_close(cpu_y.values(), y.values(), 0.0, 0.0));
          EXPECT_EQ(cpu_argmax, argmax.int_values());

          // The same gather order on both sides: bit for bit.
          SimtBuffer ddy(dtype, dy), dx(dtype, std::vector<float>(s.numel(), 7.f));
          SimtBuffer cpu_dx(dtype, std::vector<float>(s.numel()));
          cpu::maxpool2d_backward({.dtype = dtype,
                                   .dy = ddy.data(),
                                   .argmax = cpu_argmax.data(),
                                   .dx = cpu_dx.data(),
                                   .window = window});
          cuda::maxpool2d_backward({.dtype = dtype,
                                    .dy = ddy.data(),
                                    .argmax = argmax.ints(),
                                    .dx = dx.data(),
                                    .window = window},
                                   nullptr, grid);
          EXPECT_TRUE(all_close(cpu_dx.values(), dx.values(), 0.0, 0.0));
        }
      }
    }
  }
}

TEST(PoolSimt, GlobalAvgPoolMatchesCpu) {
  for (DType dtype : kDTypes) {
    for (const PoolShape& s : testing::kPoolShapes) {
      for (int offset : {0, 1}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + s.str() + " offset " +
                     std::to_string(offset));
        const int64_t spatial = s.h * s.w;
        const std::vector<float> x = testing::normal_values(s.numel(), 3, dtype, 0.5, 2.0);
        SimtBuffer dx_in(dtype, x, offset), y(dtype, std::vector<float>(s.n * s.c, 7.f), offset);
        SimtBuffer cpu_y(dtype, std::vector<float>(s.n * s.c));
        GlobalAvgPoolForwardArgs forward{.dtype = dtype,
                                         .x = dx_in.data(),
                                         .y = cpu_y.data(),
                                         .n = s.n,
                                         .spatial = spatial,
                                         .c = s.c};
        cpu::global_avgpool_forward(forward);
        // 32 threads: several row lanes per channel lane for the in-block reduction.
        forward.y = y.data();
        cuda::global_avgpool_forward(forward, nullptr, 32);
        EXPECT_TRUE(all_close(cpu_y.values(), y.values(), dtype == DType::f32 ? 1e-6 : kBf16Ulp));

        const std::vector<float> dy = testing::normal_values(s.n * s.c, 4, dtype);
        SimtBuffer ddy(dtype, dy, offset), dx(dtype, std::vector<float>(s.numel(), 7.f), offset);
        SimtBuffer cpu_dx(dtype, std::vector<float>(s.numel()));
        GlobalAvgPoolBackwardArgs backward{.dtype = dtype,
                                           .dy = ddy.data(),
                                           .dx = cpu_dx.data(),
                                           .n = s.n,
                                           .spatial = spatial,
                                           .c = s.c};
        cpu::global_avgpool_backward(backward);
        backward.dx = dx.data();
        cuda::global_avgpool_backward(backward, nullptr, {64, 2});
        EXPECT_TRUE(all_close(cpu_dx.values(), dx.values(), 0.0, 0.0));
      }
    }
  }
}

TEST(PoolSimt, EntryPointsDispatchOnDtype) {
  const PoolShape s{2, 8, 8, 16};
  for (DType dtype : kDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<float> x = testing::normal_values(s.numel(), 5, dtype);
    const int64_t out_numel = s.n * 4 * 4 * s.c;
    SimtBuffer dx_in(dtype, x), y(dtype, std::vector<float>(out_numel)), cpu_y(dtype, y.values());
    SimtBuffer argmax = SimtBuffer::i32(out_numel), cpu_argmax = SimtBuffer::i32(out_numel);
    const MaxPool2dWindow window{.n = s.n, .h = s.h, .w = s.w, .c = s.c};  // 3x3, stride 2, pad 1
    cuda::maxpool2d_forward({.dtype = dtype,
                             .x = dx_in.data(),
                             .y = y.data(),
                             .argmax = argmax.ints(),
                             .window = window},
                            nullptr);
    cpu::maxpool2d_forward({.dtype = dtype,
                            .x = dx_in.data(),
                            .y = cpu_y.data(),
                            .argmax = cpu_argmax.ints(),
                            .window = window});
    EXPECT_TRUE(all_close(cpu_y.values(), y.values(), 0.0, 0.0));
    EXPECT_EQ(cpu_argmax.int_values(), argmax.int_values());
    SimtBuffer dx(dtype, x), cpu_dx(dtype, x);
    MaxPool2dBackwardArgs backward{
        .dtype = dtype, .dy = y.data(), .argmax = argmax.ints(), .dx = dx.data(), .window = window};
    cuda::maxpool2d_backward(backward, nullptr);
    backward.dx = cpu_dx.data();
    cpu::maxpool2d_backward(backward);
    EXPECT_TRUE(all_close(cpu_dx.values(), dx.values(), 0.0, 0.0));

    SimtBuffer avg(dtype, std::vector<float>(s.n * s.c)), cpu_avg(dtype, avg.values());
    GlobalAvgPoolForwardArgs forward{
        .dtype = dtype, .x = dx_in.data(), .y = avg.data(), .n = s.n, .spatial = 64, .c = s.c};
    cuda::global_avgpool_forward(forward, nullptr);
    forward.y = cpu_avg.data();
    cpu::global_avgpool_forward(forward);
    EXPECT_TRUE(all_close(cpu_avg.values(), avg.values(), dtype == DType::f32 ? 1e-6 : kBf16Ulp));
    GlobalAvgPoolBackwardArgs backward_avg{
        .dtype = dtype, .dy = avg.data(), .dx = dx.data(), .n = s.n, .spatial = 64, .c = s.c};
    cuda::global_avgpool_backward(backward_avg, nullptr);
    backward_avg.dx = cpu_dx.data();
    cpu::global_avgpool_backward(backward_avg);
    EXPECT_TRUE(all_close(cpu_dx.values(), dx.values(), 0.0, 0.0));
  }
}

using testing::error_of;

TEST(PoolSimt, AnImageOverALaunchIsRefusedByName) {
  const PoolShape s{2, 4, 4, 3};
  SimtBuffer x(DType::f32, std::vector<float>(s.numel())), y(DType::f32, std::vector<float>(24));
  SimtBuffer argmax = SimtBuffer::i32(24);
  EXPECT_EQ(error_of([&] {
              cuda::maxpool2d_forward(
                  {.dtype = DType::f32,
                   .x = x.data(),
                   .y = y.data(),
                   .argmax = argmax.ints(),
                   .window = {.n = s.n, .h = s.h, .w = s.w, .c = s.c, .params = {}}},
                  nullptr, {.grid = {}, .max_launch_elements = 47});
            }),
            "maxpool2d: one image of 4x4x3 holds 48 elements, over the 47 a launch indexes");
  EXPECT_EQ(argmax.int_values(), SimtBuffer::i32(24).int_values());
}

TEST(PoolSimt, EntryPointsRefuseI32Activations) {
  // An i32 activation is never taken for bf16: the entry points throw before any launch.
  const PoolShape s{1, 4, 4, 2};
  SimtBuffer x(std::vector<int32_t>(s.numel(), 3)), y = SimtBuffer::i32(8);
  SimtBuffer argmax = SimtBuffer::i32(8);
  EXPECT_EQ(error_of([&] {
              cuda::maxpool2d_forward({.dtype = DType::i32,
                                       .x = x.data(),
                                       .y = y.data(),
                                       .argmax = argmax.ints(),
                                       .window = {.n = s.n, .h = s.h, .w = s.w, .c = s.c}},
                                      nullptr);
            }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] {
              cuda::maxpool2d_backward({.dtype = DType::i32,
                                        .dy = y.data(),
                                        .argmax = argmax.ints(),
                                        .dx = x.data(),
                                        .window = {.n = s.n, .h = s.h, .w = s.w, .c = s.c}},
                                       nullptr);
            }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(
      error_of([&] {
        cuda::global_avgpool_forward(
            {.dtype = DType::i32, .x = x.data(), .y = y.data(), .n = s.n, .spatial = 16, .c = s.c},
            nullptr);
      }),
      "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(argmax.int_values(), SimtBuffer::i32(8).int_values());
  EXPECT_EQ(x.int_values(), std::vector<int32_t>(s.numel(), 3));
}

}  // namespace
}  // namespace engine
