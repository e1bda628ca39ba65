// Which of the CUDA engine's kernels a convolution pass runs: the tensor-core block tile and
// epilogue (kernels/cuda/gemm_choice.h) and the number of K-splits. The default ({}) is the
// heuristic of kernels/cuda/conv.cuh; the tuner (nn/conv_tuner.h) times the candidates
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

struct ConvAlgo {
  int split_k = 0;  // 0: the heuristic's (choose_split_k), else this many K-splits
  cuda::GemmChoice gemm = {};

  bool operator==(const ConvAlgo& other) const {
    return split_k == other.split_k && gemm.tile == other.gemm.tile &&
           gemm.epilogue == other.gemm.epilogue;
  }
};

// "tile=128x64 split=4 epilogue=staged" ("auto" where the heuristic or environment decides).
std::string conv_algo_text(const ConvAlgo& algo);
// "auto", "128x128", "128x64", "64x128", "64x64"; "auto", "direct", "staged"; and back.
std::string_view gemm_tile_name(cuda::GemmTile tile);
std::optional<cuda::GemmTile> parse_gemm_tile(std::string_view text);
std::string_view gemm_epilogue_name(cuda::GemmEpilogue epilogue);
std::optional<cuda::GemmEpilogue> parse_gemm_epilogue(std::string_view text);

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
