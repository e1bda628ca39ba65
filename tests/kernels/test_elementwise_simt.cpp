// The CUDA element-wise kernels (fill, cast, ReLU, add+ReLU) run through their launchers
// under the SIMT emulator and compared bit for bit with the CPU twins. Each case runs with
// aligned pointers (vector path) and with pointers one element off (scalar path), with the
// default grid and with a 2-block grid that forces the grid-stride loop.
#include "sim/simt/simt.h"
// The kernels under test, compiled here by g++ for the emulator.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/copy.cuh"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "elementwise_cases.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/copy.h"
#include "kernels/error.h"
#include "simt_buffer.h"
#include "tests/error_text.h"

namespace engine {
namespace {

using testing::case_name;
using testing::kDTypes;
using testing::kElementwiseSizes;
using testing::make_inputs;
using testing::same_values;
using testing::SimtBuffer;

const cuda::ElementwiseLaunch kLaunchShapes[] = {{256, 2048}, {64, 2}};

TEST(ElementwiseSimt, ReluForwardMatchesCpu) {
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      for (int offset : {0, 1}) {
        for (const cuda::ElementwiseLaunch& shape : kLaunchShapes) {
          SCOPED_TRACE(case_name(dtype, n) + " offset=" + std::to_string(offset) +
                       " max_blocks=" + std::to_string(shape.max_blocks));
          const std::vector<float> x = make_inputs(n, 11, dtype);
          SimtBuffer in(dtype, x, offset), out(dtype, std::vector<float>(n, 7.f), offset);
          SimtBuffer expected(dtype, std::vector<float>(n), 0);
          cpu::relu_forward({.dtype = dtype, .x = in.data(), .y = expected.data(), .n = n});
          cuda::relu_forward({.dtype = dtype, .x = in.data(), .y = out.data(), .n = n}, nullptr,
                             shape);
          EXPECT_TRUE(same_values(expected.values(), out.values()));
        }
      }
    }
  }
}

TEST(ElementwiseSimt, ReluBackwardMatchesCpu) {
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      for (int offset : {0, 1}) {
        for (const cuda::ElementwiseLaunch& shape : kLaunchShapes) {
          SCOPED_TRACE(case_name(dtype, n) + " offset=" + std::to_string(offset));
          std::vector<float> y = make_inputs(n, 12, dtype);
          for (float& v : y)
            v = testing::reference_relu(v);
          SimtBuffer out(dtype, y, offset), grad_out(dtype, make_inputs(n, 13, dtype), offset);
          SimtBuffer grad_in(dtype, std::vector<float>(n, 7.f), offset);
          SimtBuffer expected(dtype, std::vector<float>(n), 0);
          ReluBackwardArgs args{.dtype = dtype,
                                .y = out.data(),
                                .dy = grad_out.data(),
                                .dx = expected.data(),
                                .n = n};
          cpu::relu_backward(args);
          args.dx = grad_in.data();
          cuda::relu_backward(args, nullptr, shape);
          EXPECT_TRUE(same_values(expected.values(), grad_in.values()));
        }
      }
    }
  }
}

// add_relu (relu = true) and add (relu = false) against their CPU twins.
void expect_add_matches_cpu(bool relu) {
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      for (int offset : {0, 1}) {
        for (const cuda::ElementwiseLaunch& shape : kLaunchShapes) {
          SCOPED_TRACE(case_name(dtype, n) + " offset=" + std::to_string(offset));
          SimtBuffer a(dtype, make_inputs(n, 14, dtype), offset);
          SimtBuffer b(dtype, make_inputs(n, 15, dtype), offset);
          SimtBuffer y(dtype, std::vector<float>(n, 7.f), offset);
          SimtBuffer expected(dtype, std::vector<float>(n), 0);
          AddArgs args{.dtype = dtype,
                       .a = a.data(),
                       .b = b.data(),
                       .y = expected.data(),
                       .n = n,
                       .relu = relu};
          cpu::add(args);
          args.y = y.data();
          cuda::add(args, nullptr, shape);
          EXPECT_TRUE(same_values(expected.values(), y.values()));
        }
      }
    }
  }
}

TEST(ElementwiseSimt, AddReluMatchesCpu) {
  expect_add_matches_cpu(true);
}

TEST(ElementwiseSimt, AddMatchesCpu) {
  expect_add_matches_cpu(false);
}

TEST(ElementwiseSimt, EntryPointsDispatchOnDtype) {
  // The DType entry points the op API calls on a GPU, in place (y aliases x).
  for (DType dtype : kDTypes) {
    const int64_t n = 1000;
    const std::vector<float> x = make_inputs(n, 16, dtype);
    SimtBuffer inout(dtype, x, 0), expected(dtype, std::vector<float>(n), 0);
    cpu::relu_forward({.dtype = dtype, .x = inout.data(), .y = expected.data(), .n = n});
    cuda::relu_forward({.dtype = dtype, .x = inout.data(), .y = inout.data(), .n = n}, nullptr);
    EXPECT_TRUE(same_values(expected.values(), inout.values())) << dtype_name(dtype);

    SimtBuffer a(dtype, x, 0), b(dtype, make_inputs(n, 17, dtype), 0), sum(dtype, x, 0);
    cpu::add(
        {.dtype = dtype, .a = a.data(), .b = b.data(), .y = expected.data(), .n = n, .relu = true});
    cuda::add(
        {.dtype = dtype, .a = sum.data(), .b = b.data(), .y = sum.data(), .n = n, .relu = true},
        nullptr);
    EXPECT_TRUE(same_values(expected.values(), sum.values())) << dtype_name(dtype);

    SimtBuffer plain_sum(dtype, x, 0);
    cpu::add({.dtype = dtype, .a = a.data(), .b = b.data(), .y = expected.data(), .n = n});
    cuda::add({.dtype = dtype, .a = plain_sum.data(), .b = b.data(), .y = plain_sum.data(), .n = n},
              nullptr);
    EXPECT_TRUE(same_values(expected.values(), plain_sum.values())) << dtype_name(dtype);

    SimtBuffer grad(dtype, make_inputs(n, 18, dtype), 0), grad_expected(dtype, x, 0);
    cpu::relu_backward({.dtype = dtype,
                        .y = expected.data(),
                        .dy = grad.data(),
                        .dx = grad_expected.data(),
                        .n = n});
    cuda::relu_backward(
        {.dtype = dtype, .y = expected.data(), .dy = grad.data(), .dx = grad.data(), .n = n},
        nullptr);
    EXPECT_TRUE(same_values(grad_expected.values(), grad.values())) << dtype_name(dtype);
  }
}

TEST(ElementwiseSimt, FillMatchesCpu) {
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      for (int offset : {0, 1}) {
        for (float value : {0.f, -2.5f, 1.00390625f, NAN}) {
          SCOPED_TRACE(case_name(dtype, n) + " offset=" + std::to_string(offset) +
                       " value=" + std::to_string(value));
          SimtBuffer expected(dtype, std::vector<float>(n), 0);
          cpu::fill({.dtype = dtype, .dst = expected.data(), .n = n, .value = value});
          for (const cuda::ElementwiseLaunch& shape : kLaunchShapes) {
            SimtBuffer out(dtype, std::vector<float>(n, 7.f), offset);
            cuda::fill({.dtype = dtype, .dst = out.data(), .n = n, .value = value}, nullptr, shape);
            EXPECT_TRUE(same_values(expected.values(), out.values()))
                << "max_blocks=" << shape.max_blocks;
          }
          // The entry point, with the default grid.
          SimtBuffer out(dtype, std::vector<float>(n, 7.f), offset);
          cuda::fill({.dtype = dtype, .dst = out.data(), .n = n, .value = value}, nullptr);
          EXPECT_TRUE(same_values(expected.values(), out.values())) << "entry point";
        }
      }
    }
  }
}

TEST(ElementwiseSimt, FillF64MatchesCpu) {
  // f64 (SyncBN's sums): 2-double packs on the aligned path, the scalar path one element off.
  for (int64_t n : kElementwiseSizes) {
    for (int offset : {0, 1}) {
      for (float value : {0.f, -2.5f, 1.00390625f}) {
        SCOPED_TRACE("f64 n=" + std::to_string(n) + " offset=" + std::to_string(offset) +
                     " value=" + std::to_string(value));
        std::vector<double> expected(n, 7.0);
        cpu::fill({.dtype = DType::f64, .dst = expected.data(), .n = n, .value = value});
        for (const cuda::ElementwiseLaunch& shape : kLaunchShapes) {
          SimtBuffer out(std::vector<double>(n, 7.0), offset);
          cuda::fill({.dtype = DType::f64, .dst = out.data(), .n = n, .value = value}, nullptr,
                     shape);
          EXPECT_EQ(out.double_values(), expected) << "max_blocks=" << shape.max_blocks;
        }
        SimtBuffer out(std::vector<double>(n, 7.0), offset);
        cuda::fill({.dtype = DType::f64, .dst = out.data(), .n = n, .value = value}, nullptr);
        EXPECT_EQ(out.double_values(), expected) << "entry point";
      }
    }
  }
}

TEST(ElementwiseSimt, CastMatchesCpu) {
  for (DType from : kDTypes) {
    for (DType to : kDTypes) {
      for (int64_t n : kElementwiseSizes) {
        for (int offset : {0, 1}) {
          SCOPED_TRACE(case_name(from, n) + " -> " + std::string(dtype_name(to)) +
                       " offset=" + std::to_string(offset));
          // Full fp32 inputs: the cast to bf16 must round ties to even like __float2bfloat16.
          std::vector<float> x = make_inputs(n, 19, from);
          for (size_t i = 0; i < x.size(); i += 7)
            x[i] = 1.f + (static_cast<float>(i % 5) + 0.5f) / 128.f;
          SimtBuffer in(from, x, offset), expected(to, std::vector<float>(n), 0);
          CastArgs args{
              .src_dtype = from, .src = in.data(), .dst_dtype = to, .dst = expected.data(), .n = n};
          cpu::cast(args);
          for (const cuda::ElementwiseLaunch& shape : kLaunchShapes) {
            SimtBuffer out(to, std::vector<float>(n, 7.f), offset);
            args.dst = out.data();
            cuda::cast(args, nullptr, shape);
            EXPECT_TRUE(same_values(expected.values(), out.values()))
                << "max_blocks=" << shape.max_blocks;
          }
          // The entry point, with the default grid.
          SimtBuffer out(to, std::vector<float>(n, 7.f), offset);
          args.dst = out.data();
          cuda::cast(args, nullptr);
          EXPECT_TRUE(same_values(expected.values(), out.values())) << "entry point";
        }
      }
    }
  }
}

using testing::error_of;

TEST(ElementwiseSimt, EntryPointsRefuseI32) {
  // An i32 buffer is never taken for bf16: the entry points throw before any launch.
  const std::vector<int32_t> values = {1, -2, 3, -4, 5, -6, 7, -8};
  SimtBuffer x(values), y(values);
  EXPECT_EQ(error_of([&] {
              cuda::relu_forward({.dtype = DType::i32, .x = x.data(), .y = y.data(), .n = 8},
                                 nullptr);
            }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] {
              cuda::add({.dtype = DType::i32, .a = x.data(), .b = x.data(), .y = y.data(), .n = 8},
                        nullptr);
            }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] { cuda::fill({.dtype = DType::i32, .dst = y.data(), .n = 8}, nullptr); }),
            "fill: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] {
              cuda::cast({.src_dtype = DType::i32,
                          .src = x.data(),
                          .dst_dtype = DType::f32,
                          .dst = y.data(),
                          .n = 8},
                         nullptr);
            }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(y.int_values(), values);
}

}  // namespace
}  // namespace engine
