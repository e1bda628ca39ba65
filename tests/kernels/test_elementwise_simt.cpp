// The CUDA element-wise kernels (fill, cast, ReLU, add+ReLU) run through their launchers
// under the SIMT emulator and compared bit for bit with the CPU twins. Each case runs with
// aligned pointers (vector path) and with pointers one element off (scalar path), with the
// default grid and with a 2-block grid that forces the grid-stride loop.
#include "simt/simt.h"
// The kernels under test, compiled here by g++ for the emulator.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/copy.cuh"

#include <gtest/gtest.h>

#include "elementwise_cases.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/copy.h"

namespace engine {
namespace {

using testing::case_name;
using testing::decode;
using testing::encode;
using testing::kDTypes;
using testing::kElementwiseSizes;
using testing::make_inputs;
using testing::same_values;

const cuda::ElementwiseLaunch kLaunchShapes[] = {{256, 2048}, {64, 2}};

// A device-like buffer: the values stored as dtype, starting `offset` elements into an
// allocation, so offset 1 breaks the 16-byte alignment of the vector path.
struct Buffer {
  Buffer(DType dtype, const std::vector<float>& values, int offset)
      : dtype(dtype), offset_bytes(offset * dtype_size(dtype)) {
    const std::vector<std::byte> bytes = encode(dtype, values);
    storage.assign(bytes.size() + offset_bytes + 16, std::byte{0});
    std::copy(bytes.begin(), bytes.end(), storage.begin() + offset_bytes);
  }
  void* data() { return storage.data() + offset_bytes; }
  std::vector<float> values(int64_t n) const {
    return decode(dtype, storage.data() + offset_bytes, n);
  }
  DType dtype;
  size_t offset_bytes;
  // 16-byte aligned (operator new alignment), like a cudaMalloc pointer.
  std::vector<std::byte> storage;
};

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
          Buffer in(dtype, x, offset), out(dtype, std::vector<float>(n, 7.f), offset);
          Buffer expected(dtype, std::vector<float>(n), 0);
          cpu::relu_forward(dtype, in.data(), expected.data(), n);
          with_types(dtype, [&]<typename H, typename D>() {
            cuda::relu_forward_launch(static_cast<const D*>(in.data()), static_cast<D*>(out.data()),
                                      n, nullptr, shape);
          });
          EXPECT_TRUE(same_values(expected.values(n), out.values(n)));
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
          Buffer out(dtype, y, offset), grad_out(dtype, make_inputs(n, 13, dtype), offset);
          Buffer grad_in(dtype, std::vector<float>(n, 7.f), offset);
          Buffer expected(dtype, std::vector<float>(n), 0);
          cpu::relu_backward(dtype, out.data(), grad_out.data(), expected.data(), n);
          with_types(dtype, [&]<typename H, typename D>() {
            cuda::relu_backward_launch(static_cast<const D*>(out.data()),
                                       static_cast<const D*>(grad_out.data()),
                                       static_cast<D*>(grad_in.data()), n, nullptr, shape);
          });
          EXPECT_TRUE(same_values(expected.values(n), grad_in.values(n)));
        }
      }
    }
  }
}

TEST(ElementwiseSimt, AddReluMatchesCpu) {
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      for (int offset : {0, 1}) {
        for (const cuda::ElementwiseLaunch& shape : kLaunchShapes) {
          SCOPED_TRACE(case_name(dtype, n) + " offset=" + std::to_string(offset));
          Buffer a(dtype, make_inputs(n, 14, dtype), offset);
          Buffer b(dtype, make_inputs(n, 15, dtype), offset);
          Buffer y(dtype, std::vector<float>(n, 7.f), offset);
          Buffer expected(dtype, std::vector<float>(n), 0);
          cpu::add_relu_forward(dtype, a.data(), b.data(), expected.data(), n);
          with_types(dtype, [&]<typename H, typename D>() {
            cuda::add_relu_forward_launch(static_cast<const D*>(a.data()),
                                          static_cast<const D*>(b.data()),
                                          static_cast<D*>(y.data()), n, nullptr, shape);
          });
          EXPECT_TRUE(same_values(expected.values(n), y.values(n)));
        }
      }
    }
  }
}

TEST(ElementwiseSimt, EntryPointsDispatchOnDtype) {
  // The DType entry points the op API calls on a GPU, in place (y aliases x).
  for (DType dtype : kDTypes) {
    const int64_t n = 1000;
    const std::vector<float> x = make_inputs(n, 16, dtype);
    Buffer inout(dtype, x, 0), expected(dtype, std::vector<float>(n), 0);
    cpu::relu_forward(dtype, inout.data(), expected.data(), n);
    cuda::relu_forward(dtype, inout.data(), inout.data(), n, nullptr);
    EXPECT_TRUE(same_values(expected.values(n), inout.values(n))) << dtype_name(dtype);

    Buffer a(dtype, x, 0), b(dtype, make_inputs(n, 17, dtype), 0), sum(dtype, x, 0);
    cpu::add_relu_forward(dtype, a.data(), b.data(), expected.data(), n);
    cuda::add_relu_forward(dtype, sum.data(), b.data(), sum.data(), n, nullptr);
    EXPECT_TRUE(same_values(expected.values(n), sum.values(n))) << dtype_name(dtype);

    Buffer grad(dtype, make_inputs(n, 18, dtype), 0), grad_expected(dtype, x, 0);
    cpu::relu_backward(dtype, expected.data(), grad.data(), grad_expected.data(), n);
    cuda::relu_backward(dtype, expected.data(), grad.data(), grad.data(), n, nullptr);
    EXPECT_TRUE(same_values(grad_expected.values(n), grad.values(n))) << dtype_name(dtype);
  }
}

TEST(ElementwiseSimt, FillMatchesCpu) {
  for (DType dtype : kDTypes) {
    for (int64_t n : kElementwiseSizes) {
      for (int offset : {0, 1}) {
        SCOPED_TRACE(case_name(dtype, n) + " offset=" + std::to_string(offset));
        Buffer out(dtype, std::vector<float>(n, 7.f), offset);
        Buffer expected(dtype, std::vector<float>(n), 0);
        for (float value : {0.f, -2.5f, 1.00390625f, NAN}) {
          cpu::fill(dtype, expected.data(), n, value);
          cuda::fill(dtype, out.data(), n, value, nullptr);
          EXPECT_TRUE(same_values(expected.values(n), out.values(n))) << value;
        }
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
          Buffer in(from, x, offset), out(to, std::vector<float>(n, 7.f), offset);
          Buffer expected(to, std::vector<float>(n), 0);
          cpu::cast(from, in.data(), to, expected.data(), n);
          cuda::cast(from, in.data(), to, out.data(), n, nullptr);
          EXPECT_TRUE(same_values(expected.values(n), out.values(n)));
        }
      }
    }
  }
}

}  // namespace
}  // namespace engine
