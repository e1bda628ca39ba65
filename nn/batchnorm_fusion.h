// How much of each training BatchNorm the CUDA step folds into its convolutions (--fusion):
//   none   BatchNorm runs its own passes (statistics, normalize + ReLU) between convolutions;
//   stats  the convolution before it computes its statistics in its epilogue
//          (Conv2d::feed_batchnorm_stats);
//   apply  also, where one convolution alone reads a BatchNorm + ReLU output (inside a residual
//          block), that convolution applies them as it loads its operand, so the output is
//          never written (Conv2d::read_input_through), and BatchNorm's backward recomputes the
//          ReLU's mask from its input;
//   full   also, that convolution's input gradient gates itself by the ReLU's mask and gives
//          BatchNorm's backward sums in its epilogue, BatchNorm's backward then being its
//          element-wise pass alone (cuDNN's dgrad + drelu + dbn); and likewise each residual
//          block's input gradient (its first convolution's plus its identity branch's) for the
//          last BatchNorm of the block before, gating by that block's stored output
//          (Conv2d::gate_input_grad_by).
// The CPU runs the same arithmetic either way, unfused.
#pragma once

#include <optional>
#include <string_view>

namespace engine::nn {

enum class BatchNormFusion { none, stats, apply, full };

// "none", "stats", "apply" or "full"; nullopt for anything else.
std::optional<BatchNormFusion> batchnorm_fusion_from_name(std::string_view name);
std::string_view batchnorm_fusion_name(BatchNormFusion fusion);

}  // namespace engine::nn
