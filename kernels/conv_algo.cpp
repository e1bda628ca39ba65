#include "kernels/conv_algo.h"

#include <tuple>

namespace engine {

namespace {

std::string_view tile_name(cuda::GemmTile tile) {
  switch (tile) {
    case cuda::GemmTile::t128x128:
      return "128x128";
    case cuda::GemmTile::t128x64:
      return "128x64";
    case cuda::GemmTile::t64x128:
      return "64x128";
    case cuda::GemmTile::t64x64:
      return "64x64";
    case cuda::GemmTile::automatic:
      break;
  }
  return "auto";
}

std::string_view epilogue_name(cuda::GemmEpilogue epilogue) {
  switch (epilogue) {
    case cuda::GemmEpilogue::direct:
      return "direct";
    case cuda::GemmEpilogue::staged:
      return "staged";
    case cuda::GemmEpilogue::automatic:
      break;
  }
  return "auto";
}

auto shape_fields(const Conv2dShape& s) {
  return std::tie(s.batch, s.in_h, s.in_w, s.in_channels, s.out_channels, s.kernel_h, s.kernel_w,
                  s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dilation_h, s.dilation_w);
}

}  // namespace

std::string conv_algo_text(const ConvAlgo& algo) {
  return "tile=" + std::string(tile_name(algo.gemm.tile)) +
         " split=" + (algo.split_k == 0 ? std::string("auto") : std::to_string(algo.split_k)) +
         " epilogue=" + std::string(epilogue_name(algo.gemm.epilogue));
}

std::string_view conv_pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::backward_data:
      return "backward_data";
    case ConvPass::backward_filter:
      return "backward_filter";
    case ConvPass::forward:
      break;
  }
  return "forward";
}

std::string ConvProblem::str() const {
  const std::string precision =
      dtype == DType::f32 && math == Fp32Math::tf32 ? "tf32" : std::string(dtype_name(dtype));
  return std::string(conv_pass_name(pass)) + " " + precision + " " + shape.str();
}

std::strong_ordering operator<=>(const ConvProblem& a, const ConvProblem& b) {
  return std::tuple_cat(std::tie(a.pass, a.dtype, a.math), shape_fields(a.shape)) <=>
         std::tuple_cat(std::tie(b.pass, b.dtype, b.math), shape_fields(b.shape));
}

bool operator==(const ConvProblem& a, const ConvProblem& b) {
  return (a <=> b) == std::strong_ordering::equal;
}

void append_conv_problems(const Conv2dShape& shape, DType dtype, Fp32Math math, bool input_grad,
                          std::vector<ConvProblem>& problems) {
  problems.push_back({shape, ConvPass::forward, dtype, math});
  if (input_grad) problems.push_back({shape, ConvPass::backward_data, dtype, math});
  problems.push_back({shape, ConvPass::backward_filter, dtype, math});
}

}  // namespace engine
