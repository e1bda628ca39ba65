// The integer dtypes, i32 (labels) and u8 (the max-pool argmax): what takes them and what
// refuses them. Every float op
// must refuse an i32 tensor by name instead of reading its bytes as bf16, at the op (its
// checks) and again at the kernels' dtype dispatch. The loss and pool ops, which take i32
// labels and argmax, test their own refusals in test_loss_cpu.cpp and test_pool_cpu.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/fp32_buffer.h"
#include "kernels/dtype.h"
#include "kernels/ops.h"
#include "tests/error_text.h"

namespace engine {
namespace {

using testing::error_of;

std::string refusal(const std::string& op, const std::string& name, const Tensor& t) {
  return op + ": " + name + " is " + t.describe() + ", expected a float dtype (f32 or bf16)";
}

TEST(IntegerDType, DispatchRefusesIt) {
  int calls = 0;
  EXPECT_EQ(error_of([&] { dispatch_dtype(DType::i32, [&]<typename T>() { ++calls; }); }),
            "dispatch_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(is_float_dtype(DType::f32));
  EXPECT_TRUE(is_float_dtype(DType::bf16));
  EXPECT_FALSE(is_float_dtype(DType::i32));
  // A CPU kernel entry point called past the op checks refuses it too.
  std::vector<int32_t> data(8, 1), out(8, 0);
  EXPECT_EQ(error_of([&] {
              cpu::relu_forward({.dtype = DType::i32, .x = data.data(), .y = out.data(), .n = 8});
            }),
            "dispatch_dtype: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(out, std::vector<int32_t>(8, 0));
  // The fp32 views of the GEMM-based CPU ops (conv, linear) dispatch by hand: they refuse it.
  EXPECT_EQ(error_of([&] { cpu::Fp32Input in(DType::i32, data.data(), 8); }),
            "Fp32Input: i32 is not a float dtype (f32 or bf16)");
  EXPECT_EQ(error_of([&] { cpu::Fp32Output result(DType::i32, out.data(), 8, true); }),
            "Fp32Output: i32 is not a float dtype (f32 or bf16)");
}

TEST(IntegerDType, ElementwiseOpsRefuseIt) {
  Stream stream;
  Tensor ints = Tensor::from_ints({2, 4}, {1, -2, 3, -4, 5, -6, 7, -8});
  Tensor out = Tensor::empty({2, 4}, DType::i32);
  Tensor floats = Tensor::empty({2, 4}, DType::f32);
  EXPECT_EQ(error_of([&] { relu_forward(ints, out, stream); }), refusal("relu_forward", "x", ints));
  EXPECT_EQ(error_of([&] { relu_backward({.y = ints, .dy = ints, .dx = out}, stream); }),
            refusal("relu_backward", "y", ints));
  EXPECT_EQ(error_of([&] { add_relu_forward({.a = ints, .b = ints, .y = out}, stream); }),
            refusal("add_relu_forward", "a", ints));
  EXPECT_EQ(error_of([&] { add({.a = ints, .b = ints, .y = out}, stream); }),
            refusal("add", "a", ints));
  EXPECT_EQ(error_of([&] { fill(out, 0.f, stream); }), refusal("fill", "dst", out));
  EXPECT_EQ(error_of([&] { cast(ints, floats, stream); }), refusal("cast", "src", ints));
  EXPECT_EQ(error_of([&] { cast(floats, out, stream); }), refusal("cast", "dst", out));
  // Nothing was written: the values are those from_ints stored.
  EXPECT_EQ(ints.to_ints(stream), (std::vector<int32_t>{1, -2, 3, -4, 5, -6, 7, -8}));
}

TEST(IntegerDType, BytesRoundTripAndFloatOpsRefuseThem) {
  Stream stream;
  Tensor codes = Tensor::from_bytes({2, 4}, {0, 1, 2, 8, 9, 24, 200, 255});
  EXPECT_EQ(codes.describe(), "u8[2, 4] on cpu");
  EXPECT_EQ(codes.nbytes(), 8u);
  EXPECT_EQ(codes.to_bytes(stream), (std::vector<uint8_t>{0, 1, 2, 8, 9, 24, 200, 255}));
  EXPECT_EQ(codes.to_floats(stream),
            (std::vector<float>{0.f, 1.f, 2.f, 8.f, 9.f, 24.f, 200.f, 255.f}));
  EXPECT_EQ(codes.clone(stream).to_bytes(stream), codes.to_bytes(stream));
  EXPECT_EQ(error_of([&] {
              Tensor::from_bytes({3}, {1, 2});
            }),
            "Tensor::from_bytes: 2 values for shape [3]");
  EXPECT_EQ(error_of([&] { codes.to_ints(stream); }),
            "Tensor::to_ints on u8[2, 4] on cpu (use to_floats)");
  EXPECT_EQ(error_of([&] { Tensor::from_ints({1}, {1}).to_bytes(stream); }),
            "Tensor::to_bytes on i32[1] on cpu (use to_floats)");
  EXPECT_EQ(error_of([&] { dispatch_dtype(DType::u8, []<typename T>() {}); }),
            "dispatch_dtype: u8 is not a float dtype (f32 or bf16)");
  Tensor out = Tensor::empty({2, 4}, DType::u8);
  EXPECT_EQ(error_of([&] { relu_forward(codes, out, stream); }),
            refusal("relu_forward", "x", codes));
  EXPECT_EQ(error_of([&] { fill(out, 0.f, stream); }), refusal("fill", "dst", out));
  EXPECT_EQ(error_of([&] { add({.a = codes, .b = codes, .y = out}, stream); }),
            refusal("add", "a", codes));
}

TEST(IntegerDType, ConvBatchNormAndSgdRefuseIt) {
  Stream stream;
  Conv2dShape shape;
  shape.batch = 2;
  shape.in_h = shape.in_w = 3;
  shape.in_channels = 4;
  shape.out_channels = 5;
  Tensor x = Tensor::empty(shape.input_shape(), DType::i32);
  Tensor w = Tensor::empty(shape.filter_shape(), DType::i32);
  Tensor y = Tensor::empty(shape.output_shape(), DType::i32);
  Tensor dw = Tensor::empty(shape.filter_shape(), DType::f32);
  Tensor none;
  EXPECT_EQ(error_of([&] {
              conv2d_forward(shape, {.x = x, .w = w, .bias = none, .y = y, .workspace = {}},
                             stream);
            }),
            refusal("conv2d_forward", "x", x));
  EXPECT_EQ(error_of([&] {
              conv2d_backward_data(shape, {.dy = y, .w = w, .dx = x, .workspace = {}}, stream);
            }),
            refusal("conv2d_backward_data", "dy", y));
  EXPECT_EQ(error_of([&] {
              conv2d_backward_filter(shape,
                                     {.x = x,
                                      .dy = y,
                                      .dw = dw,
                                      .dbias = none,
                                      .workspace = none,
                                      .write = GradWrite::overwrite},
                                     stream);
            }),
            refusal("conv2d_backward_filter", "x", x));

  Tensor stats = Tensor::empty({batchnorm_stats_numel(4)}, DType::f32);
  Tensor channel = Tensor::empty({4}, DType::f32);
  Tensor grad_sums = Tensor::empty({8}, DType::f32);
  EXPECT_EQ(error_of([&] { batchnorm_stats({.x = x, .stats = stats, .workspace = none}, stream); }),
            refusal("batchnorm_stats", "x", x));
  EXPECT_EQ(error_of([&] {
              batchnorm_normalize(
                  {.x = x, .batch_stats = stats, .weight = channel, .bias = channel, .y = x},
                  stream);
            }),
            refusal("batchnorm_normalize", "x", x));
  EXPECT_EQ(error_of([&] {
              batchnorm_eval_forward({.x = x,
                                      .running_mean = channel,
                                      .running_var = channel,
                                      .weight = channel,
                                      .bias = channel,
                                      .y = x,
                                      .eps = 1e-5f},
                                     stream);
            }),
            refusal("batchnorm_eval_forward", "x", x));
  EXPECT_EQ(
      error_of([&] {
        batchnorm_backward_reduce(
            {.dy = x, .x = x, .batch_stats = stats, .grad_sums = grad_sums, .workspace = none},
            stream);
      }),
      refusal("batchnorm_backward_reduce", "x", x));
  EXPECT_EQ(error_of([&] {
              batchnorm_backward_elementwise({.dy = x,
                                              .x = x,
                                              .batch_stats = stats,
                                              .weight = channel,
                                              .grad_sums = grad_sums,
                                              .dx = x},
                                             stream);
            }),
            refusal("batchnorm_backward_elementwise", "x", x));

  Tensor params = Tensor::from_ints({3}, {1, 2, 3});
  const std::string sgd = error_of([&] {
    sgd_step({},
             {.params = params,
              .grads = params,
              .momentum_buffer = none,
              .buffer_state = MomentumBuffer::empty},
             stream);
  });
  EXPECT_NE(sgd.find("sgd_step: params is i32[3] on cpu"), std::string::npos) << sgd;
}

}  // namespace
}  // namespace engine
