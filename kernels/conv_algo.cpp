#include "kernels/conv_algo.h"

#include <tuple>
#include <utility>

namespace engine {

namespace {

constexpr std::pair<std::string_view, cuda::GemmTile> kTiles[] = {
    {"auto", cuda::GemmTile::automatic},
    {"128x128", cuda::GemmTile::t128x128},
    {"128x64", cuda::GemmTile::t128x64},
    {"64x128", cuda::GemmTile::t64x128},
    {"64x64", cuda::GemmTile::t64x64}};
constexpr std::pair<std::string_view, cuda::GemmEpilogue> kEpilogues[] = {
    {"auto", cuda::GemmEpilogue::automatic},
    {"direct", cuda::GemmEpilogue::direct},
    {"staged", cuda::GemmEpilogue::staged}};
constexpr std::pair<std::string_view, ChannelPadding> kPaddings[] = {
    {"auto", ChannelPadding::automatic},
    {"none", ChannelPadding::none},
    {"vector", ChannelPadding::vector}};
constexpr std::pair<std::string_view, ConvPass> kPasses[] = {
    {"forward", ConvPass::forward},
    {"backward_data", ConvPass::backward_data},
    {"backward_filter", ConvPass::backward_filter}};
constexpr std::pair<std::string_view, ConvFusion> kFusions[] = {
    {"none", ConvFusion::none},
    {"affine", ConvFusion::input_affine},
    {"stats", ConvFusion::output_stats},
    {"affine+stats", ConvFusion::input_affine_output_stats},
    {"bn_backward", ConvFusion::batchnorm_backward},
    {"add+bn_backward", ConvFusion::residual_batchnorm_backward}};

template <typename Enum, size_t N>
std::string_view name_of(Enum value, const std::pair<std::string_view, Enum> (&names)[N]) {
  for (const auto& [name, v] : names) {
    if (v == value) return name;
  }
  return names[0].first;
}

template <typename Enum, size_t N>
std::optional<Enum> value_of(std::string_view text,
                             const std::pair<std::string_view, Enum> (&names)[N]) {
  for (const auto& [name, value] : names) {
    if (name == text) return value;
  }
  return std::nullopt;
}

auto shape_fields(const Conv2dShape& s) {
  return std::tie(s.batch, s.in_h, s.in_w, s.in_channels, s.out_channels, s.kernel_h, s.kernel_w,
                  s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dilation_h, s.dilation_w);
}

}  // namespace

std::string_view gemm_tile_name(cuda::GemmTile tile) {
  return name_of(tile, kTiles);
}
std::optional<cuda::GemmTile> parse_gemm_tile(std::string_view text) {
  return value_of(text, kTiles);
}
std::string_view gemm_epilogue_name(cuda::GemmEpilogue epilogue) {
  return name_of(epilogue, kEpilogues);
}
std::optional<cuda::GemmEpilogue> parse_gemm_epilogue(std::string_view text) {
  return value_of(text, kEpilogues);
}
std::string_view channel_padding_name(ChannelPadding padding) {
  return name_of(padding, kPaddings);
}
std::optional<ChannelPadding> parse_channel_padding(std::string_view text) {
  return value_of(text, kPaddings);
}
std::string_view conv_pass_name(ConvPass pass) {
  return name_of(pass, kPasses);
}
std::optional<ConvPass> parse_conv_pass(std::string_view text) {
  return value_of(text, kPasses);
}

std::string_view conv_fusion_name(ConvFusion fusion) {
  return name_of(fusion, kFusions);
}
std::optional<ConvFusion> parse_conv_fusion(std::string_view text) {
  return value_of(text, kFusions);
}

std::string conv_algo_text(const ConvAlgo& algo) {
  return "tile=" + std::string(gemm_tile_name(algo.gemm.tile)) +
         " split=" + (algo.split_k == 0 ? std::string("auto") : std::to_string(algo.split_k)) +
         " epilogue=" + std::string(gemm_epilogue_name(algo.gemm.epilogue)) +
         " padding=" + std::string(channel_padding_name(algo.padding));
}

std::string ConvProblem::str() const {
  const std::string precision =
      dtype == DType::f32 && math == Fp32Math::tf32 ? "tf32" : std::string(dtype_name(dtype));
  std::string text = std::string(conv_pass_name(pass)) + " " + precision + " " + shape.str();
  if (fusion != ConvFusion::none) text += " + " + std::string(conv_fusion_name(fusion));
  return text;
}

std::strong_ordering operator<=>(const ConvProblem& a, const ConvProblem& b) {
  return std::tuple_cat(std::tie(a.pass, a.dtype, a.math, a.fusion), shape_fields(a.shape)) <=>
         std::tuple_cat(std::tie(b.pass, b.dtype, b.math, b.fusion), shape_fields(b.shape));
}

bool operator==(const ConvProblem& a, const ConvProblem& b) {
  return (a <=> b) == std::strong_ordering::equal;
}

}  // namespace engine
