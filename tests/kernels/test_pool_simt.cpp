// The CUDA pooling kernels through their launchers under the SIMT emulator, against the CPU
// twins: max pooling (values and argmax bit for bit, ties and NaN; 8 channels a thread and
// one, by channel count and placement), its gathering backward, and global average pooling
// (vector and scalar channel paths), with default and small grids, and max pooling also an
// image per launch.
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

using testing::kDTypes;
// Max pooling's launch geometries: each grid over all the images at once, and the small grid
// one image per launch (as a batch of over 2^31 elements is launched).
struct PoolGrid {
  cuda::ElementwiseLaunch grid;
  bool image_per_launch = false;
  std::string str() const {
    return "max_blocks " + std::to_string(grid.max_blocks) +
           (image_per_launch ? ", an image per launch" : "");
  }
};
const PoolGrid kPoolGrids[] = {{{256, 2048}}, {{64, 2}}, {{64, 2}, true}};

// Where the buffers start: aligned (8 channels a thread where C % 8 == 0), the activations an
// element off 16 bytes, or the argmax a byte off 8: both of those take the scalar path.
struct Placement {
  int activation_offset = 0;
  int argmax_offset = 0;
  std::string str() const {
    return "offsets " + std::to_string(activation_offset) + "/" + std::to_string(argmax_offset);
  }
};
const Placement kAligned{}, kPlacements[] = {{}, {1, 0}, {0, 1}};

// Max pooling forward and backward of x through the launchers and the CPU twin: y and the
// argmax bit for bit, then dx (the same gather order on both sides) bit for bit. Checks that
// the launch took the vector path exactly when the channels and placement allow it.
void expect_maxpool_matches_cpu(DType dtype, const MaxPool2dGeometry& g,
                                const std::vector<float>& x, const PoolGrid& pool_grid,
                                const Placement& at) {
  const int64_t numel = g.n * g.image_numel(), out_numel = testing::pooled_numel(g);
  const std::vector<float> dy = testing::normal_values(out_numel, 2, dtype);
  const int offset = at.activation_offset;
  SimtBuffer dx_in(dtype, x, offset), y(dtype, std::vector<float>(out_numel, 7.f), offset);
  SimtBuffer argmax = SimtBuffer::u8(out_numel, at.argmax_offset);
  SimtBuffer cpu_y(dtype, std::vector<float>(out_numel));
  std::vector<uint8_t> cpu_argmax(out_numel);
  const bool vector_path = g.c % 8 == 0 && offset == 0 && at.argmax_offset == 0;
  EXPECT_EQ(cuda::maxpool_channels_per_thread(g.c, dx_in.data(), y.data(), argmax.bytes()),
            vector_path ? cuda::kMaxPoolVec : 1);
  cuda::PoolLaunch grid{pool_grid.grid};
  if (pool_grid.image_per_launch) grid.max_launch_elements = cuda::maxpool_image_elements(g);
  cpu::maxpool2d_forward({.dtype = dtype,
                          .x = dx_in.data(),
                          .y = cpu_y.data(),
                          .argmax = cpu_argmax.data(),
                          .geometry = g});
  cuda::maxpool2d_forward(
      {.dtype = dtype, .x = dx_in.data(), .y = y.data(), .argmax = argmax.bytes(), .geometry = g},
      nullptr, grid);
  EXPECT_TRUE(all_close(cpu_y.values(), y.values(), 0.0, 0.0));
  EXPECT_EQ(cpu_argmax, argmax.byte_values());

  SimtBuffer ddy(dtype, dy, offset), dx(dtype, std::vector<float>(numel, 7.f), offset);
  SimtBuffer cpu_dx(dtype, std::vector<float>(numel));
  cpu::maxpool2d_backward({.dtype = dtype,
                           .dy = ddy.data(),
                           .argmax = cpu_argmax.data(),
                           .dx = cpu_dx.data(),
                           .geometry = g});
  cuda::maxpool2d_backward(
      {.dtype = dtype, .dy = ddy.data(), .argmax = argmax.bytes(), .dx = dx.data(), .geometry = g},
      nullptr, grid);
  EXPECT_TRUE(all_close(cpu_dx.values(), dx.values(), 0.0, 0.0));
}

TEST(PoolSimt, MaxPoolForwardBackwardMatchCpu) {
  for (DType dtype : kDTypes) {
    for (const MaxPool2dParams& win : testing::kWindows) {
      for (const PoolShape& s : testing::kPoolShapes) {
        const MaxPool2dGeometry g = testing::maxpool_geometry(s, win);
        if (!testing::fits(g)) continue;
        std::vector<float> x = testing::normal_values(s.numel(), 1, dtype);
        x[s.numel() / 2] = NAN;
        x[s.numel() / 3] = NAN;
        for (const PoolGrid& pool_grid : kPoolGrids) {
          for (const Placement& at : kPlacements) {
            // Off-aligned placements change the path only where C % 8 == 0.
            if ((at.activation_offset != 0 || at.argmax_offset != 0) && s.c % 8 != 0) continue;
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + testing::geometry_str(g) + " " +
                         pool_grid.str() + " " + at.str());
            expect_maxpool_matches_cpu(dtype, g, x, pool_grid, at);
          }
        }
      }
    }
  }
}

TEST(PoolSimt, MaxPoolTiesInfinitiesAndNaNMatchCpu) {
  // Ties resolve to the first position in window order and the last NaN of a window wins it,
  // lane by lane: constant inputs, -inf everywhere (the argmax stays at the first valid
  // position), and few distinct values with NaNs in some channels, on both paths.
  const PoolShape shapes[] = {{2, 7, 9, 16}, {1, 5, 6, 3}, {3, 6, 5, 8}};
  for (DType dtype : kDTypes) {
    for (const PoolShape& s : shapes) {
      std::vector<std::vector<float>> inputs = {std::vector<float>(s.numel(), 1.5f),
                                                std::vector<float>(s.numel(), -INFINITY)};
      std::vector<float> few(s.numel());
      for (int64_t i = 0; i < s.numel(); ++i)
        few[i] = static_cast<float>((i * 7 / 3) % 3);
      for (int64_t i = 5; i < s.numel(); i += 11)
        few[i] = NAN;
      inputs.push_back(few);
      for (size_t input = 0; input < inputs.size(); ++input) {
        for (const MaxPool2dParams& win : {testing::kWindows[0], testing::kWindows[2]}) {
          const MaxPool2dGeometry g = testing::maxpool_geometry(s, win);
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + testing::geometry_str(g) + " input " +
                       std::to_string(input));
          expect_maxpool_matches_cpu(dtype, g, inputs[input], kPoolGrids[1], kAligned);
        }
      }
    }
  }
}

TEST(PoolSimt, TheWidestWindowMatchesCpu) {
  // 16x16 windows: argmax codes up to 255, on the vector path and the scalar one.
  for (DType dtype : kDTypes) {
    for (const PoolShape& s : testing::kWidestShapes) {
      const MaxPool2dGeometry g = testing::maxpool_geometry(s, testing::kWidestWindow);
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + testing::geometry_str(g));
      std::vector<float> x(s.numel());
      for (int64_t i = 0; i < s.numel(); ++i)
        x[i] = testing::round_to(dtype, static_cast<float>(i / s.c));
      expect_maxpool_matches_cpu(dtype, g, x, kPoolGrids[1], kAligned);
      expect_maxpool_matches_cpu(dtype, g, testing::normal_values(s.numel(), 9, dtype),
                                 kPoolGrids[0], kAligned);
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
    SimtBuffer argmax = SimtBuffer::u8(out_numel), cpu_argmax = SimtBuffer::u8(out_numel);
    const MaxPool2dGeometry g = testing::maxpool_geometry(s, {});  // 3x3, stride 2, pad 1
    cuda::maxpool2d_forward(
        {.dtype = dtype, .x = dx_in.data(), .y = y.data(), .argmax = argmax.bytes(), .geometry = g},
        nullptr);
    cpu::maxpool2d_forward({.dtype = dtype,
                            .x = dx_in.data(),
                            .y = cpu_y.data(),
                            .argmax = cpu_argmax.bytes(),
                            .geometry = g});
    EXPECT_TRUE(all_close(cpu_y.values(), y.values(), 0.0, 0.0));
    EXPECT_EQ(cpu_argmax.byte_values(), argmax.byte_values());
    SimtBuffer dx(dtype, x), cpu_dx(dtype, x);
    MaxPool2dBackwardArgs backward{
        .dtype = dtype, .dy = y.data(), .argmax = argmax.bytes(), .dx = dx.data(), .geometry = g};
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
  SimtBuffer argmax = SimtBuffer::u8(24);
  EXPECT_EQ(error_of([&] {
              cuda::maxpool2d_forward({.dtype = DType::f32,
                                       .x = x.data(),
                                       .y = y.data(),
                                       .argmax = argmax.bytes(),
                                       .geometry = testing::maxpool_geometry(s, {})},
                                      nullptr, {.grid = {}, .max_launch_elements = 47});
            }),
            "maxpool2d: one image of 4x4x3 holds 48 elements, over the 47 a launch indexes");
  EXPECT_EQ(argmax.byte_values(), SimtBuffer::u8(24).byte_values());
}

TEST(PoolSimt, EntryPointsRefuseI32Activations) {
  // An i32 activation is never taken for bf16: the entry points throw before any launch.
  const PoolShape s{1, 4, 4, 2};
  SimtBuffer x(std::vector<int32_t>(s.numel(), 3)), y = SimtBuffer::i32(8);
  SimtBuffer argmax = SimtBuffer::u8(8);
  EXPECT_EQ(error_of([&] {
              cuda::maxpool2d_forward({.dtype = DType::i32,
                                       .x = x.data(),
                                       .y = y.data(),
                                       .argmax = argmax.bytes(),
                                       .geometry = testing::maxpool_geometry(s, {})},
                                      nullptr);
            }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] {
              cuda::maxpool2d_backward({.dtype = DType::i32,
                                        .dy = y.data(),
                                        .argmax = argmax.bytes(),
                                        .dx = x.data(),
                                        .geometry = testing::maxpool_geometry(s, {})},
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
  EXPECT_EQ(argmax.byte_values(), SimtBuffer::u8(8).byte_values());
  EXPECT_EQ(x.int_values(), std::vector<int32_t>(s.numel(), 3));
}

}  // namespace
}  // namespace engine
