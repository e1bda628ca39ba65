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

// Calls fn.template operator()<HostT, DeviceT>() for the dtype.
template <typename Fn>
void with_types(DType dtype, Fn&& fn) {
  if (dtype == DType::f32) {
    fn.template operator()<float, float>();
  } else {
    fn.template operator()<bf16, __nv_bfloat16>();
  }
}

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
          cpu::relu_forward(dtype, in.data(), expected.data(), n);
          with_types(dtype, [&]<typename H, typename D>() {
            cuda::relu_forward_launch(static_cast<const D*>(in.data()), static_cast<D*>(out.data()),
                                      n, nullptr, shape);
          });
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
          cpu::relu_backward(dtype, out.data(), grad_out.data(), expected.data(), n);
          with_types(dtype, [&]<typename H, typename D>() {
            cuda::relu_backward_launch(static_cast<const D*>(out.data()),
                                       static_cast<const D*>(grad_out.data()),
                                       static_cast<D*>(grad_in.data()), n, nullptr, shape);
          });
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
          (relu ? cpu::add_relu_forward : cpu::add)(dtype, a.data(), b.data(), expected.data(), n);
          with_types(dtype, [&]<typename H, typename D>() {
            (relu ? cuda::add_relu_forward_launch<D>
                  : cuda::add_launch<D>)(static_cast<const D*>(a.data()),
                                         static_cast<const D*>(b.data()), static_cast<D*>(y.data()),
                                         n, nullptr, shape);
          });
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
    cpu::relu_forward(dtype, inout.data(), expected.data(), n);
    cuda::relu_forward(dtype, inout.data(), inout.data(), n, nullptr);
    EXPECT_TRUE(same_values(expected.values(), inout.values())) << dtype_name(dtype);

    SimtBuffer a(dtype, x, 0), b(dtype, make_inputs(n, 17, dtype), 0), sum(dtype, x, 0);
    cpu::add_relu_forward(dtype, a.data(), b.data(), expected.data(), n);
    cuda::add_relu_forward(dtype, sum.data(), b.data(), sum.data(), n, nullptr);
    EXPECT_TRUE(same_values(expected.values(), sum.values())) << dtype_name(dtype);

    SimtBuffer plain_sum(dtype, x, 0);
    cpu::add(dtype, a.data(), b.data(), expected.data(), n);
    cuda::add(dtype, plain_sum.data(), b.data(), plain_sum.data(), n, nullptr);
    EXPECT_TRUE(same_values(expected.values(), plain_sum.values())) << dtype_name(dtype);

    SimtBuffer grad(dtype, make_inputs(n, 18, dtype), 0), grad_expected(dtype, x, 0);
    cpu::relu_backward(dtype, expected.data(), grad.data(), grad_expected.data(), n);
    cuda::relu_backward(dtype, expected.data(), grad.data(), grad.data(), n, nullptr);
    EXPECT_TRUE(same_values(grad_expected.values(), grad.values())) << dtype_name(dtype);
  }
}

// The fill value as the launcher takes it, rounded to bf16 as the entry point rounds it.
template <typename D>
D device_value(float value) {
  if constexpr (std::is_same_v<D, float>) {
    return value;
  } else {
    __nv_bfloat16_raw bits;
    bits.x = bf16::from_float(value);
    return __nv_bfloat16(bits);
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
          cpu::fill(dtype, expected.data(), n, value);
          for (const cuda::ElementwiseLaunch& shape : kLaunchShapes) {
            SimtBuffer out(dtype, std::vector<float>(n, 7.f), offset);
            with_types(dtype, [&]<typename H, typename D>() {
              cuda::fill_launch(static_cast<D*>(out.data()), n, device_value<D>(value), nullptr,
                                shape);
            });
            EXPECT_TRUE(same_values(expected.values(), out.values()))
                << "max_blocks=" << shape.max_blocks;
          }
          // The entry point, with the default grid.
          SimtBuffer out(dtype, std::vector<float>(n, 7.f), offset);
          cuda::fill(dtype, out.data(), n, value, nullptr);
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
        cpu::fill(DType::f64, expected.data(), n, value);
        for (const cuda::ElementwiseLaunch& shape : kLaunchShapes) {
          SimtBuffer out(std::vector<double>(n, 7.0), offset);
          cuda::fill_launch(out.doubles(), n, static_cast<double>(value), nullptr, shape);
          EXPECT_EQ(out.double_values(), expected) << "max_blocks=" << shape.max_blocks;
        }
        SimtBuffer out(std::vector<double>(n, 7.0), offset);
        cuda::fill(DType::f64, out.data(), n, value, nullptr);
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
          cpu::cast(from, in.data(), to, expected.data(), n);
          for (const cuda::ElementwiseLaunch& shape : kLaunchShapes) {
            SimtBuffer out(to, std::vector<float>(n, 7.f), offset);
            with_types(from, [&]<typename HIn, typename DIn>() {
              with_types(to, [&]<typename HOut, typename DOut>() {
                cuda::cast_launch(static_cast<const DIn*>(in.data()),
                                  static_cast<DOut*>(out.data()), n, nullptr, shape);
              });
            });
            EXPECT_TRUE(same_values(expected.values(), out.values()))
                << "max_blocks=" << shape.max_blocks;
          }
          // The entry point, with the default grid.
          SimtBuffer out(to, std::vector<float>(n, 7.f), offset);
          cuda::cast(from, in.data(), to, out.data(), n, nullptr);
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
  EXPECT_EQ(error_of([&] { cuda::relu_forward(DType::i32, x.data(), y.data(), 8, nullptr); }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] { cuda::add(DType::i32, x.data(), x.data(), y.data(), 8, nullptr); }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] { cuda::fill(DType::i32, y.data(), 8, 0.f, nullptr); }),
            "fill: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] { cuda::cast(DType::i32, x.data(), DType::f32, y.data(), 8, nullptr); }),
            "dispatch_device_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(y.int_values(), values);
}

}  // namespace
}  // namespace engine
