// ldmatrix .x4, mma.sync m16n8k16 (bf16) and m16n8k8 (tf32) and cvt.rna.tf32.f32
// (kernels/cuda/warp_mma.cuh) on a CUDA device against the PTX ISA's fragment layouts and
// rounding, and cp.async's zero fill and commit groups
// (kernels/cuda/async_copy.cuh): the checks the SIMT emulator's emulation of them passes
// (tests/simt/test_warp_matrix.cpp, test_async_copy.cpp), here on the hardware, so a wrong emulated
// layout shows as these cases failing on a GPU rather than as a bf16 conv result off somewhere.
// Skipped, with the reason, without a usable CUDA device.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/runtime.h"
#include "kernels/tensor.h"
#include "tests/kernels/async_copy_checks.h"
#include "tests/kernels/gpu_fixture.h"
#include "tests/kernels/warp_matrix_checks.h"
#include "tests/kernels/warp_mma_probe.h"

namespace engine {
namespace {

using namespace engine::testing;

// Skipped, with the reason, without a usable CUDA device.
class WarpMmaGpu : public testing::GpuOpTest {};

void check_ldmatrix(bool transpose) {
  Stream stream(Device::cuda(0));
  const std::vector<float> input = ldmatrix_probe_input();
  const Tensor matrices =
      Tensor::from_floats({static_cast<int64_t>(input.size())}, input).to(Device::cuda(0), stream);
  Tensor out = Tensor::zeros({32 * 4 * 2}, DType::f32, Device::cuda(0), stream);
  launch_ldmatrix_probe(transpose, matrices.data<float>(), out.data<float>(), stream);
  expect_ldmatrix_layout(out.to_floats(stream), transpose);
}

TEST_F(WarpMmaGpu, LdmatrixGivesEachLaneItsRowPair) {
  check_ldmatrix(false);
}

TEST_F(WarpMmaGpu, LdmatrixTransGivesEachLaneItsColumnPair) {
  check_ldmatrix(true);
}

Tensor to_gpu(const std::vector<float>& values, Stream& stream) {
  return Tensor::from_floats({static_cast<int64_t>(values.size())}, values)
      .to(Device::cuda(0), stream);
}

TEST_F(WarpMmaGpu, MmaMatchesNaiveProductThroughThePtxFragmentLayout) {
  Stream stream(Device::cuda(0));
  const MmaProbeInputs in = mma_probe_inputs();
  const Tensor a = to_gpu(in.a, stream), b = to_gpu(in.b, stream), c = to_gpu(in.c, stream);
  Tensor d = Tensor::zeros({16 * 8}, DType::f32, Device::cuda(0), stream);
  launch_mma_probe(a.data<float>(), b.data<float>(), c.data<float>(), d.data<float>(), stream);
  expect_mma_product(in, d.to_floats(stream));
}

void check_mma_tf32(bool tf32_exact) {
  Stream stream(Device::cuda(0));
  const MmaProbeInputs in = mma_tf32_probe_inputs(tf32_exact);
  const Tensor a = to_gpu(in.a, stream), b = to_gpu(in.b, stream), c = to_gpu(in.c, stream);
  Tensor d = Tensor::zeros({16 * 8}, DType::f32, Device::cuda(0), stream);
  launch_mma_tf32_probe(a.data<float>(), b.data<float>(), c.data<float>(), d.data<float>(), stream);
  expect_mma_tf32_product(in, d.to_floats(stream));
}

TEST_F(WarpMmaGpu, MmaTf32MatchesNaiveProductThroughThePtxFragmentLayout) {
  check_mma_tf32(true);
}

// What the emulator assumes of fp32 bits that no cvt rounded (the tf32 engine always rounds).
TEST_F(WarpMmaGpu, MmaTf32IgnoresTheLow13BitsOfItsOperands) {
  check_mma_tf32(false);
}

TEST_F(WarpMmaGpu, Tf32RoundingIsToNearestTiesAwayFromZero) {
  Stream stream(Device::cuda(0));
  const std::vector<float> input = tf32_round_probe_input();
  const Tensor in = to_gpu(input, stream);
  Tensor out =
      Tensor::zeros({static_cast<int64_t>(input.size())}, DType::f32, Device::cuda(0), stream);
  launch_tf32_round_probe(in.data<float>(), out.data<float>(), static_cast<int>(input.size()),
                          stream);
  expect_tf32_rounded(input, out.to_floats(stream));
}

TEST_F(WarpMmaGpu, WarpTileWrappersMatchTheirInstructionsOneByOne) {
  Stream stream(Device::cuda(0));
  Tensor mismatches = Tensor::zeros({32}, DType::i32, Device::cuda(0), stream);
  launch_warp_tile_probe(mismatches.data<int32_t>(), stream);
  const std::vector<int32_t> counts = mismatches.to_ints(stream);
  for (int lane = 0; lane < 32; ++lane)
    EXPECT_EQ(counts[lane], 0) << "lane " << lane;
}

TEST_F(WarpMmaGpu, AsyncCopiesLandByGroupAndZeroFill) {
  Stream stream(Device::cuda(0));
  const std::vector<float> input = async_copy_probe_input();
  const Tensor src =
      Tensor::from_floats({static_cast<int64_t>(input.size())}, input).to(Device::cuda(0), stream);
  Tensor out =
      Tensor::zeros({static_cast<int64_t>(input.size())}, DType::f32, Device::cuda(0), stream);
  launch_async_copy_probe(src.data<float>(), out.data<float>(), stream);
  expect_async_copies_landed(input, out.to_floats(stream));
}

}  // namespace
}  // namespace engine
