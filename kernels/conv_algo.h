// Which of the CUDA engine's kernels a convolution pass runs: the tensor-core block tile and
// epilogue (kernels/cuda/gemm_choice.h), the number of K-splits and, for a filter gradient
// whose input channels the 16-byte loads cannot take, whether x is padded first. The default ({})
// is the heuristic of kernels/cuda/conv.cuh; the tuner (nn/conv_tuner.h) times the candidates
// cuda::conv2d_candidates lists and keeps the fastest per problem in a ConvPlans table
// (kernels/conv_plans.h). The CPU backend ignores it.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/conv_shape.h"
#include "kernels/cuda/gemm_choice.h"
#include "kernels/dtype.h"
#include "kernels/fp32_math.h"

namespace engine {

// How a tensor-core filter gradient reads an x whose channel count is not a multiple of the
// 16-byte vector (8 bf16, 4 tf32; the stem's 3): `none` as it is, element by element (about
// 37 instructions per HMMA), `vector` from a copy padded with zero channels to that width,
// which the 16-byte path reads (more products, by the padding, at about 6 instructions per
// HMMA, and two small launches: the pad and the padded gradient's unpad). `automatic`: the
// environment's ENGINE_FILTER_GRAD_PADDING=none|vector, none when unset (the tuner times both).
// Every other pass and engine reads x as it is.
enum class ChannelPadding : uint8_t { automatic, none, vector };

struct ConvAlgo {
  int split_k = 0;  // 0: the heuristic's (choose_split_k), else this many K-splits
  cuda::GemmChoice gemm = {};
  ChannelPadding padding = ChannelPadding::automatic;

  bool operator==(const ConvAlgo& other) const {
    return split_k == other.split_k && gemm.tile == other.gemm.tile &&
           gemm.epilogue == other.gemm.epilogue && padding == other.padding;
  }
};

// "tile=128x64 split=4 epilogue=staged padding=none" ("auto" where the heuristic or environment
// decides).
std::string conv_algo_text(const ConvAlgo& algo);
// "auto", "128x128", "128x64", "64x128", "64x64"; "auto", "direct", "staged"; and back.
std::string_view gemm_tile_name(cuda::GemmTile tile);
std::optional<cuda::GemmTile> parse_gemm_tile(std::string_view text);
std::string_view gemm_epilogue_name(cuda::GemmEpilogue epilogue);
std::optional<cuda::GemmEpilogue> parse_gemm_epilogue(std::string_view text);
// "auto", "none", "vector"; and back.
std::string_view channel_padding_name(ChannelPadding padding);
std::optional<ChannelPadding> parse_channel_padding(std::string_view text);

// The three passes of a convolution in training.
enum class ConvPass : uint8_t { forward, backward_data, backward_filter };
std::string_view conv_pass_name(ConvPass pass);  // "forward", "backward_data", ...
std::optional<ConvPass> parse_conv_pass(std::string_view text);

// What a pass computes besides the convolution, as the layers run it with BatchNorm fused
// (kernels/ops/conv.h's fusions, nn/batchnorm_fusion.h). Part of the problem: the fused kernels
// are others, and their fastest algorithm may differ from the plain pass's (an unsplit K keeps
// the statistics in the epilogue, where a split runs a separate statistics pass; the
// transformed loads and the gated store take registers and time).
enum class ConvFusion : uint8_t {
  none,
  input_affine,               // forward or filter gradient: x read through BatchNorm + ReLU
  output_stats,               // forward: the output's BatchNorm statistics in the epilogue
  input_affine_output_stats,  // forward: both
  batchnorm_backward,         // input gradient: gated by the ReLU, with BatchNorm's sums
  // input gradient: plus the identity branch's, gated by the stored ReLU output it read (a
  // residual block's), with that block's last BatchNorm's sums
  residual_batchnorm_backward,
};
// "none", "affine", "stats", "affine+stats", "bn_backward", "add+bn_backward"; and back.
std::string_view conv_fusion_name(ConvFusion fusion);
std::optional<ConvFusion> parse_conv_fusion(std::string_view text);

// One convolution pass to choose an algorithm for: the shape, the pass, the precision (the
// activations' dtype; for f32, how the stream multiplies) and what it fuses.
struct ConvProblem {
  Conv2dShape shape;
  ConvPass pass = ConvPass::forward;
  DType dtype = DType::f32;
  Fp32Math math = Fp32Math::exact;
  ConvFusion fusion = ConvFusion::none;

  // e.g. "forward bf16 n128 56x56x64 -> 64 3x3 s1 p1", with " + stats" when fused
  std::string str() const;
};
std::strong_ordering operator<=>(const ConvProblem& a, const ConvProblem& b);
bool operator==(const ConvProblem& a, const ConvProblem& b);

}  // namespace engine
