// How much of each training BatchNorm the CUDA step folds into its convolutions (--fusion):
//   none   BatchNorm runs its own passes (statistics, normalize + ReLU) between convolutions;
//   stats  the convolution before it computes its statistics in its epilogue
//          (Conv2d::feed_batchnorm_stats);
//   apply  also, where one convolution alone reads a BatchNorm + ReLU output (inside a residual
//          block), that convolution applies them as it loads its operand, so the output is
//          never written (Conv2d::read_input_through), and BatchNorm's backward recomputes the
//          ReLU's mask from its input;
//   block  also, that convolution's input gradient gates itself by the ReLU's mask and gives
//          BatchNorm's backward sums in its epilogue, BatchNorm's backward then being its
//          element-wise pass alone (cuDNN's dgrad + drelu + dbn);
//   full   also across blocks: each residual block's input gradient (its first
//          convolution's plus its identity branch's) does the same for the last BatchNorm of
//          the block before, gating by that block's stored output (Conv2d::gate_input_grad_by);
//          the gradient a block passes back is then already gated by that ReLU, so a layer's
//          backward gives the true gradient at its input only up to block.
// The CPU runs the same arithmetic either way, unfused.
#pragma once

#include <optional>
#include <string_view>

namespace engine::nn {

enum class BatchNormFusion { none, stats, apply, block, full };

// "none", "stats", "apply", "block" or "full"; nullopt for anything else.
std::optional<BatchNormFusion> batchnorm_fusion_from_name(std::string_view name);
std::string_view batchnorm_fusion_name(BatchNormFusion fusion);

// Whether a residual block's first convolution does the backward reduction of the BatchNorm
// whose output it reads, the block before's last (full, on CUDA): Conv2d::gate_input_grad_by's
// rule, which that BatchNorm's setup asks too, before the wiring, to take no buffer for the
// ReLU's gradient that the convolution then writes.
inline bool batchnorm_fusion_crosses_blocks(BatchNormFusion fusion, bool on_cpu) {
  return fusion == BatchNormFusion::full && !on_cpu;
}

}  // namespace engine::nn
