// CUDA entry points of conv2d (defined in conv.cuh, compiled by conv.cu): implicit GEMM on
// NHWC/KRSC tensors; for f32 tensors fp32 SIMT (Fp32Math::exact) or tf32 tensor cores
// (Fp32Math::tf32), for bf16 tensors bf16 tensor cores (fp32 accumulate, fp32_math unread).
// The argument structs of kernels/args/conv.h with device pointers, and the stream; the CPU
// twins (kernels/cpu/conv.h) take the same structs.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/args/conv.h"
#include "kernels/cuda/cuda_runtime.h"

namespace engine::cuda {

// Device workspace conv2d_backward_filter needs with `algo` (fp32 split-K partials and bias
// partials).
size_t conv2d_backward_filter_workspace_bytes(const Conv2dShape& shape, const ConvAlgo& algo = {});

// Device workspace conv2d_forward and conv2d_backward_data use with `algo` to split K where the
// output has too few tiles to fill the GPU (fp32 partials); 0 where they would not split.
size_t conv2d_forward_workspace_bytes(const Conv2dShape& shape, const ConvAlgo& algo = {});
size_t conv2d_backward_data_workspace_bytes(const Conv2dShape& shape, const ConvAlgo& algo = {});

// Device memory for the counters by which a pass with `algo` sums its split-K partials in the
// GEMM's own launch (the args' split_counters; zeroed once, every call leaves them zero); 0
// where the pass does not split.
size_t conv2d_split_counters_bytes(const Conv2dShape& shape, ConvPass pass,
                                   const ConvAlgo& algo = {});

// The algorithms worth timing for `problem`, the heuristic's first (spelled out: its tile and
// split count): every block tile the pass can run (bf16's 16-byte path has four) with no split,
// the heuristic's split count for that tile and twice it, where the pass splits at all. No two
// alike, none that the launcher would not run as asked.
std::vector<ConvAlgo> conv2d_candidates(const ConvProblem& problem);

void conv2d_forward(const Conv2dForwardArgs& args, cudaStream_t stream);

// conv2d_forward that also writes args.stats = batchnorm_stats(y) (defined in
// conv_forward_stats.cuh): from the convolution's epilogue where it can, else by a
// batchnorm_stats pass over y; conv2d_forward_stats_path says which these arguments take.
// workspace: conv2d_forward_stats_workspace_bytes(shape, algo), zeroed before its first use
// (it holds counters that every call leaves at zero, as batchnorm's workspace).
size_t conv2d_forward_stats_workspace_bytes(const Conv2dShape& shape, const ConvAlgo& algo = {});
ConvStatsPath conv2d_forward_stats_path(const Conv2dForwardArgs& args);
void conv2d_forward_stats(const Conv2dForwardArgs& args, cudaStream_t stream);
void conv2d_backward_data(const Conv2dBackwardDataArgs& args, cudaStream_t stream);
// Whether conv2d_backward_data can add args.dx_add in its epilogue (one GEMM without split K,
// no BatchNorm): elsewhere the caller adds it after.
bool conv2d_backward_data_adds(const Conv2dBackwardDataArgs& args);

// conv2d_backward_data with args.batchnorm active (defined in conv_backward_bn.cuh, compiled by
// conv_backward_bn.cu): dx gated by the ReLU's mask and the BatchNorm's backward sums, from the
// convolution's epilogue where it can (conv2d_backward_data_bn_path), else by
// batchnorm_backward_reduce over dx after it. workspace:
// conv2d_backward_data_bn_workspace_bytes(shape, algo), zeroed before its first use.
size_t conv2d_backward_data_bn_workspace_bytes(const Conv2dShape& shape, const ConvAlgo& algo = {});
ConvStatsPath conv2d_backward_data_bn_path(const Conv2dBackwardDataArgs& args);
void conv2d_backward_data_bn(const Conv2dBackwardDataArgs& args, cudaStream_t stream);
void conv2d_backward_filter(const Conv2dBackwardFilterArgs& args, cudaStream_t stream);
// scale and shift of a ConvInputTransform from BatchNorm's statistics (kernels/args/conv.h).
void conv_input_from_batchnorm(const ConvInputFromBatchNormArgs& args, cudaStream_t stream);

}  // namespace engine::cuda
