// The convolutions' tap classes on the CPU (kernels/cpu/tap_classes.h): the classes partition
// the output pixels by the taps that read inside the input, the portable passes per class do
// not depend on the thread count and are chosen where they pay, the plan's taps read, and the
// bf16 filter gradient's products per tap over the pixels that read inside.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "conv_cpu_fixtures.h"
#include "conv_reference.h"
#include "kernels/cpu/conv_sgemm.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/tap_classes.h"
#include "kernels/ops.h"
#include "portable_loops.h"

namespace engine {
namespace {

using testing::conv_cases;
using testing::ConvTensors;
using testing::kF32Tolerance;
using testing::on_1_2_and_3_threads;
using testing::relative_error;

TEST(ConvCpu, TapClassesPartitionThePixelsByTheirTapsInside) {
  // The forward pass multiplies each output pixel by its class's taps only: every pixel must
  // be in exactly one class, whose taps are exactly those that read inside the input.
  for (const auto& [name, shape] : conv_cases()) {
    SCOPED_TRACE(std::string(name) + " " + shape.str());
    std::vector<int> seen(static_cast<size_t>(shape.gemm_m()), 0);
    for (const cpu::TapClass& taps : cpu::tap_classes(shape)) {
      for (int64_t index = 0; index < shape.batch * taps.pixels_per_image(); ++index) {
        const int64_t m = taps.output_row(shape, index);
        ASSERT_GE(m, 0);
        ASSERT_LT(m, shape.gemm_m());
        ++seen[m];
        const int64_t oh = m / shape.out_w() % shape.out_h(), ow = m % shape.out_w();
        for (int64_t r = 0; r < shape.kernel_h; ++r) {
          for (int64_t s = 0; s < shape.kernel_w; ++s) {
            const int64_t h = oh * shape.stride_h - shape.pad_h + r * shape.dilation_h;
            const int64_t w = ow * shape.stride_w - shape.pad_w + s * shape.dilation_w;
            const bool inside = h >= 0 && h < shape.in_h && w >= 0 && w < shape.in_w;
            const bool in_class = r >= taps.rows.begin && r < taps.rows.end &&
                                  s >= taps.cols.begin && s < taps.cols.end;
            ASSERT_EQ(inside, in_class) << "pixel " << m << " tap " << r << "," << s;
          }
        }
      }
    }
    for (int64_t m = 0; m < shape.gemm_m(); ++m)
      ASSERT_EQ(seen[m], 1) << "pixel " << m;
    // And per tap: the output rows (columns) whose tap r (s) reads inside the input.
    const auto check_axis = [](const char* axis, int64_t kernel, int64_t stride, int64_t pad,
                               int64_t dilation, int64_t out_extent, int64_t in_extent) {
      for (int64_t tap = 0; tap < kernel; ++tap) {
        const cpu::TapRange outputs =
            cpu::outputs_reading_inside(tap, stride, pad, dilation, out_extent, in_extent);
        for (int64_t out = 0; out < out_extent; ++out) {
          const int64_t in = out * stride - pad + tap * dilation;
          ASSERT_EQ(in >= 0 && in < in_extent, out >= outputs.begin && out < outputs.end)
              << axis << ": tap " << tap << " output " << out;
        }
      }
    };
    check_axis("rows", shape.kernel_h, shape.stride_h, shape.pad_h, shape.dilation_h, shape.out_h(),
               shape.in_h);
    check_axis("columns", shape.kernel_w, shape.stride_w, shape.pad_w, shape.dilation_w,
               shape.out_w(), shape.in_w);
  }
}

TEST(ConvCpu, PortableTapClassesDoNotDependOnTheThreadCount) {
  // 20 images of an 8x8 map: nine classes, the interior's 720 rows in two chunks of the
  // column budget (693 rows of 3024 values); 3 images of 1x1: one class, the centre tap. Every
  // pass, bit for bit on 1, 2 and 3 threads.
  const testing::PortableLoops portable;
  const testing::ForcedTapClasses forced(true);
  for (const Conv2dShape& shape : {testing::conv_shape(20, 8, 8, 336, 24, 3, 3, 1, 1),
                                   testing::conv_shape(3, 1, 1, 40, 24, 3, 3, 1, 1)}) {
    SCOPED_TRACE(shape.str());
    ConvTensors t(shape, DType::f32);
    Stream stream;
    const std::vector<std::vector<float>> results = on_1_2_and_3_threads([&] {
      Tensor y = Tensor::empty(shape.output_shape(), DType::f32);
      Tensor dx = Tensor::empty(shape.input_shape(), DType::f32);
      Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32);
      conv2d_forward(shape, {.x = t.x, .w = t.w, .bias = Tensor{}, .y = y, .workspace = {}},
                     stream);
      conv2d_backward_data(shape, {.dy = t.dy, .w = t.w, .dx = dx, .workspace = {}}, stream);
      conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::overwrite), stream);
      std::vector<float> all = y.to_floats(stream);
      for (const Tensor* tensor : {&dx, &dw}) {
        const std::vector<float> values = tensor->to_floats(stream);
        all.insert(all.end(), values.begin(), values.end());
      }
      return all;
    });
    EXPECT_EQ(results[0], results[1]);
    EXPECT_EQ(results[0], results[2]);
  }
}

TEST(ConvCpu, PortableTapClassesPayOnSmallMapsAtLargeBatches) {
  // The estimate against the faster way measured on the AMD EPYC Zen 3
  // (bench/results/conv-cpu-tap-classes-sgemm-amd-epyc-zen3-avx2.txt): per class on ResNet-18's
  // 1x1 to 4x4 maps at batch 64 (1.1-7.7x the full rows' speed), the full rows on its 40x40
  // and 20x20 maps at batch 8 (0.88-0.95x per class), at batch 1 (0.46-0.85x) and on the stem.
  const auto pays = [](const Conv2dShape& shape) {
    return cpu::tap_classes_pay(shape, cpu::TapClassPlan(shape));
  };
  EXPECT_TRUE(pays(testing::conv_shape(64, 1, 1, 512, 512, 3, 3, 1, 1)));
  EXPECT_TRUE(pays(testing::conv_shape(64, 2, 2, 256, 256, 3, 3, 1, 1)));
  EXPECT_TRUE(pays(testing::conv_shape(64, 4, 4, 128, 128, 3, 3, 1, 1)));
  EXPECT_FALSE(pays(testing::conv_shape(8, 40, 40, 64, 64, 3, 3, 1, 1)));
  EXPECT_FALSE(pays(testing::conv_shape(8, 20, 20, 128, 128, 3, 3, 1, 1)));
  EXPECT_FALSE(pays(testing::conv_shape(1, 7, 7, 512, 512, 3, 3, 1, 1)));
  EXPECT_FALSE(pays(testing::conv_shape(64, 32, 32, 3, 64, 7, 7, 2, 3)));
}

TEST(ConvCpu, TapClassPlanReadsTheTapsSomePixelReadsInside) {
  // A 3x3 filter on a 1x1 map reads its centre tap only: one class, one run of C rows; on a
  // 2x2 map every tap is read by some pixel; a 1x1 filter padded by 1 on a 3x4 map has border
  // classes that read nothing (no runs) and the centre tap read by the rest.
  const cpu::TapClassPlan centre(testing::conv_shape(2, 1, 1, 16, 8, 3, 3, 1, 1));
  EXPECT_EQ(centre.taps_read,
            std::vector<bool>({false, false, false, false, true, false, false, false, false}));
  ASSERT_EQ(centre.runs.size(), 1u);
  ASSERT_EQ(centre.runs[0].size(), 1u);
  EXPECT_EQ(centre.runs[0][0].b_begin, 4 * 16);
  EXPECT_EQ(centre.runs[0][0].length, 16);
  const cpu::TapClassPlan corners(testing::conv_shape(2, 2, 2, 16, 8, 3, 3, 1, 1));
  EXPECT_EQ(corners.taps_read, std::vector<bool>(9, true));
  const cpu::TapClassPlan padded(testing::conv_shape(2, 3, 4, 5, 6, 1, 1, 1, 1));
  EXPECT_EQ(padded.taps_read, std::vector<bool>({true}));
  int64_t without_runs = 0;
  for (size_t c = 0; c < padded.classes.size(); ++c)
    without_runs += padded.runs[c].empty() ? padded.classes[c].pixels_per_image() : 0;
  EXPECT_EQ(without_runs, 5 * 6 - 3 * 4);
}

// The bf16 filter gradient's products per tap over the pixels reading inside only: a 1x1 map
// (8 of 9 taps read by no pixel), 2x2 and strided 4x4 maps (runs of a pair a image), an odd
// pixel count, and two 1024-pixel steps whose taps are skipped or not in each. Each way (runs
// forced, full rows, the estimate's), overwriting a dW of NaN and accumulating, against the
// reference, and bit for bit on 1, 2 and 3 threads.
TEST(ConvCpu, Bf16FilterGradientSkipsThePaddingPerTap) {
  std::vector<cpu::Bf16Products> ways;
  if (cpu::cpu_has_avx512_bf16()) ways.push_back(cpu::Bf16Products::kAvx512Bf16);
  if (cpu::cpu_has_amx_bf16()) ways.push_back(cpu::Bf16Products::kAmx);
  if (ways.empty()) GTEST_SKIP() << "this CPU multiplies bf16 widened to fp32 (no AVX512_BF16)";
  Stream stream;
  const std::vector<Conv2dShape> shapes = {testing::conv_shape(6, 1, 1, 64, 40, 3, 3, 1, 1),
                                           testing::conv_shape(5, 2, 2, 64, 40, 3, 3, 1, 1),
                                           testing::conv_shape(3, 4, 4, 32, 24, 3, 3, 2, 1),
                                           testing::conv_shape(7, 3, 3, 32, 16, 3, 3, 1, 1),
                                           testing::conv_shape(300, 2, 2, 32, 16, 3, 3, 1, 1),
                                           testing::conv_shape(1100, 1, 1, 32, 16, 3, 3, 1, 1)};
  for (cpu::Bf16Products way : ways) {
    const testing::ForcedBf16Products forced_way(way);
    for (const std::optional<bool> runs :
         {std::optional<bool>{true}, std::optional<bool>{false}, std::optional<bool>{}}) {
      const testing::ForcedTapClasses forced_runs(runs);
      for (const Conv2dShape& shape : shapes) {
        SCOPED_TRACE(shape.str() + " " + cpu::bf16_products_name(way) + " runs " +
                     (runs ? (*runs ? "on" : "off") : "auto"));
        ConvTensors t(shape, DType::bf16);
        const std::vector<double> expected =
            testing::reference_conv_backward_filter(shape, t.x_values, t.dy_values);
        const std::vector<std::vector<float>> results = on_1_2_and_3_threads([&] {
          Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32);
          fill(dw, NAN, stream);
          conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::overwrite), stream);
          return dw.to_floats(stream);
        });
        EXPECT_EQ(results[0], results[1]);
        EXPECT_EQ(results[0], results[2]);
        EXPECT_LE(relative_error(results[0], expected), kF32Tolerance);
        Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32);
        fill(dw, 0.5f, stream);
        conv2d_backward_filter(shape, t.filter_gradient(dw, GradWrite::accumulate), stream);
        std::vector<double> accumulated = expected;
        for (double& value : accumulated)
          value += 0.5;
        EXPECT_LE(relative_error(dw.to_floats(stream), accumulated), kF32Tolerance);
      }
    }
  }
}

// An odd pixel count's pad pixel (dY^T's last column, which completes its last 32-pixel block
// here: 7 images of 3x3 = 63 pixels) is a zero, not a read past dY's end, where the value is
// NaN (a zero in the pad of B times a NaN there would poison dW).
TEST(ConvCpu, Bf16FilterGradientReadsNothingPastDy) {
  if (!cpu::cpu_has_avx512_bf16() && !cpu::cpu_has_amx_bf16()) {
    GTEST_SKIP() << "this CPU multiplies bf16 widened to fp32 (no AVX512_BF16)";
  }
  Stream stream;
  const Conv2dShape shape = testing::conv_shape(7, 3, 3, 32, 32, 3, 3, 1, 1);
  ConvTensors t(shape, DType::bf16);
  std::vector<float> padded = t.dy_values;
  padded.resize(padded.size() + static_cast<size_t>(shape.out_channels), NAN);
  const Tensor storage =
      Tensor::from_floats({static_cast<int64_t>(padded.size())}, padded, DType::bf16);
  Conv2dBackwardFilterOperands operands =
      t.filter_gradient(Tensor::empty(shape.filter_shape(), DType::f32), GradWrite::overwrite);
  operands.dy = storage.view(0, shape.output_shape());
  conv2d_backward_filter(shape, operands, stream);
  EXPECT_LE(relative_error(operands.dw.to_floats(stream),
                           testing::reference_conv_backward_filter(shape, t.x_values, t.dy_values)),
            kF32Tolerance);
}

}  // namespace
}  // namespace engine
