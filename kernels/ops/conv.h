// conv2d and linear (implemented in kernels/ops/conv.cpp). Tensors are NHWC / KRSC; x, w and
// y share one dtype (f32, or bf16 on tensor cores with fp32 accumulation); bias and its
// gradient are fp32; a filter gradient is fp32 (master weights) or the activation dtype.
// Optional tensors (bias, dbias) are undefined when absent (kernels/ops/checks.h).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/args/conv.h"
#include "kernels/conv_algo.h"
#include "kernels/conv_shape.h"
#include "kernels/device.h"
#include "kernels/ops/batchnorm.h"
#include "kernels/ops/grad_write.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine {

// The input a convolution reads, normalized as it loads: act(x * scale[c] + shift[c]) at input
// channel c (act: ReLU when relu, NaN staying NaN), its zero padding staying 0, so that the
// BatchNorm-apply and ReLU before a convolution never write their output
// (kernels/args/conv.h: ConvInputTransform). scale and shift: f32[C] on x's device, from
// conv_input_from_batchnorm; an undefined scale: x as it is.
struct ConvInputAffine {
  Tensor scale, shift;
  bool relu = false;
};

// scale = invstd * weight, shift = bias - mean * scale: BatchNorm's training transform of
// batch_stats with weight and bias, as a ConvInputAffine's scale and shift. With
// conv2d_forward then, conv(relu(batchnorm(x))) reads x alone; the sums differ from
// batchnorm_normalize's by rounding only.
struct ConvInputFromBatchNormOperands {
  Tensor batch_stats;             // f32[2C+1]: mean, invstd, count
  Tensor weight = {}, bias = {};  // f32[C], or undefined: 1 and 0
  Tensor scale, shift;            // f32[C] each
};
void conv_input_from_batchnorm(ConvInputFromBatchNormOperands operands, Stream& stream);
// The same from evaluation's running statistics: invstd = 1 / sqrt(running_var + eps), so that
// conv(relu(batchnorm_eval_forward(x))) reads x alone.
struct ConvInputFromRunningStatsOperands {
  Tensor running_mean, running_var;  // f32[C] each
  Tensor weight = {}, bias = {};     // f32[C], or undefined: 1 and 0
  Tensor scale, shift;               // f32[C] each
  float eps = 1e-5f;                 // added to the variance; > 0
};
void conv_input_from_running_stats(ConvInputFromRunningStatsOperands operands, Stream& stream);

// f32 elements of scratch with which conv2d_forward / conv2d_backward_data split the
// reduction where the output alone has too few tiles to fill a GPU (small batches at the last
// stages); 0 on the CPU and where no split pays. Allocate once per layer shape, as below.
// `algo` (kernels/conv_algo.h: the CUDA kernels to run, {} for the heuristic's) is the one the
// pass will be called with: its split count sizes the workspace.
int64_t conv2d_forward_workspace_numel(const Conv2dShape& shape, Device device,
                                       const ConvAlgo& algo = {});
int64_t conv2d_backward_data_workspace_numel(const Conv2dShape& shape, Device device,
                                             const ConvAlgo& algo = {});

// i32 elements of the counters with which `pass` (run with `algo`) sums its split-K partials in
// the GEMM's own launch, each output tile's last split to finish summing them: the operands'
// split_counters, zeroed once (Tensor::zeros) and left zero by every call, so they may be shared
// by passes that run one after another on a stream. 0 on the CPU and where the pass does not
// split. Without them a split pass sums its partials in a second launch, with the same bits.
int64_t conv2d_split_counters_numel(const Conv2dShape& shape, ConvPass pass, Device device,
                                    const ConvAlgo& algo = {});

// What the forward may compute besides y (undefined tensors: not asked).
struct Conv2dForwardFusion {
  // f32[2K+1]: what batchnorm_stats writes (kernels/ops/batchnorm.h's stats: mean[K], m2[K],
  // count) of y as stored, so that a training BatchNorm on y skips its statistics pass. On
  // CUDA from the convolution's epilogue where it can (conv2d_forward_stats_path), else by a
  // batchnorm_stats pass over y. Needs the workspace of conv2d_forward_stats_workspace_numel.
  Tensor stats = {};
  // With stats: the phases batchnorm_stats may finish in the same launch (its
  // BatchNormStatsFusion: the fp64 sums, then the finalize), with the same bits.
  BatchNormStatsFusion batchnorm = {};
  // x as the convolution reads it (ConvInputAffine above); with stats too, those of y.
  ConvInputAffine input = {};
};

// y = conv(x, w) + bias. With fusion.input.scale defined, x is read through that transform.
struct Conv2dForwardOperands {
  Tensor x, w;
  Tensor bias = {};  // f32[K] or undefined
  Tensor y;
  // f32 with at least conv2d_forward_workspace_numel elements; undefined: no split. With
  // fusion.stats: conv2d_forward_stats_workspace_numel elements, zeroed once before its first
  // use (Tensor::zeros: it holds counters that every call leaves at zero).
  Tensor workspace = {};
  // i32, conv2d_split_counters_numel(shape, forward, ...) or more, or undefined (above). Unread
  // with fusion.stats, whose workspace holds its own.
  Tensor split_counters = {};
};
void conv2d_forward(const Conv2dShape& shape, Conv2dForwardOperands operands, Stream& stream,
                    const ConvAlgo& algo = {}, const Conv2dForwardFusion& fusion = {});

// f32 elements of the workspace conv2d_forward needs with fusion.stats (0 on the CPU).
int64_t conv2d_forward_stats_workspace_numel(const Conv2dShape& shape, Device device,
                                             const ConvAlgo& algo = {});
// Where conv2d_forward(shape, operands, stream, algo, {stats}) takes the statistics from: the
// epilogue (bf16 or tf32 tensor cores storing through the staged epilogue without split K),
// else (and on the CPU) a separate batchnorm_stats pass over y. Reads operands.y and operands.bias.
ConvStatsPath conv2d_forward_stats_path(const Conv2dShape& shape,
                                        const Conv2dForwardOperands& operands, Stream& stream,
                                        const ConvAlgo& algo = {});
// What the input-gradient pass may compute besides dx (x undefined: nothing): the backward
// reduction of the BatchNorm + ReLU whose output a the convolution read, cuDNN's dgrad + drelu
// + dbn. a is either recomputed from x through the transform the forward read it by
// (input: fusion.input, from conv_input_from_batchnorm over batch_stats) or stored
// (relu_output: a residual block's output, which the next block's first convolution reads as
// it is; operands.add may then carry the identity branch's gradient, added before the gate).
// dx then holds g' = the gradient at a (dx as stored, after the add, zeroed where a was not
// positive), and grad_sums (f32[2C]), bias_grad and weight_grad (f32[C] or undefined; added to
// with GradWrite::accumulate) are what batchnorm_backward_reduce gives for g' and x:
// batchnorm_backward_elementwise then reads dx as its dy, without a ReLU mask. On CUDA from the
// convolution's epilogue where it can (conv2d_backward_data_bn_path), else by a
// batchnorm_backward_reduce pass over dx. Needs the workspace of
// conv2d_backward_data_bn_workspace_numel.
struct Conv2dBackwardDataFusion {
  Tensor x;                    // the BatchNorm's input: like dx
  Tensor batch_stats;          // f32[2C+1]: mean, invstd, count
  ConvInputAffine input = {};  // the transform the forward read x through (relu set), or
  Tensor relu_output = {};     // a as stored, like dx (exactly one of the two)
  Tensor grad_sums;
  Tensor bias_grad, weight_grad;
  GradWrite write = GradWrite::overwrite;
};

// dx = gradient of the input; overwrites dx (and, with fusion.x defined, the fusion's outputs).
struct Conv2dBackwardDataOperands {
  Tensor dy, w;
  Tensor dx;
  // As the forward's, of conv2d_backward_data_workspace_numel elements; undefined: no split.
  // With fusion.x defined: conv2d_backward_data_bn_workspace_numel elements, zeroed once before
  // its first use (it holds counters that every call leaves at zero).
  Tensor workspace = {};
  // As the forward's (pass backward_data); unread with fusion.x.
  Tensor split_counters = {};
  // Like dx, or undefined: dx = the gradient + add, with the bits of an add op after it (a
  // residual block's identity branch): on CUDA in the convolution's epilogue where it stores dx
  // as one GEMM without split K, else by the add's own launch. With fusion.x only where it is
  // gated by fusion.relu_output.
  Tensor add = {};
};
void conv2d_backward_data(const Conv2dShape& shape, Conv2dBackwardDataOperands operands,
                          Stream& stream, const ConvAlgo& algo = {},
                          const Conv2dBackwardDataFusion& fusion = {});
// f32 elements of the workspace conv2d_backward_data needs with fusion.x (0 on the CPU).
int64_t conv2d_backward_data_bn_workspace_numel(const Conv2dShape& shape, Device device,
                                                const ConvAlgo& algo = {});
// Where conv2d_backward_data(shape, operands, stream, algo, fusion with x) gates and sums: the
// epilogue (bf16 or tf32 tensor cores storing through the staged epilogue, one GEMM without
// split K, dx and x in 16-byte rows, channels a multiple of 8), else (and on the CPU) a
// batchnorm_backward_reduce pass over dx. Reads operands.dx and fusion.x.
ConvStatsPath conv2d_backward_data_bn_path(const Conv2dShape& shape,
                                           const Conv2dBackwardDataOperands& operands,
                                           const Conv2dBackwardDataFusion& fusion, Stream& stream,
                                           const ConvAlgo& algo = {});

// f32 elements of scratch that conv2d_backward_filter needs for `shape` on `device` (split-K
// partials on CUDA; 0 on the CPU). Allocate it once per layer shape and reuse it.
int64_t conv2d_backward_filter_workspace_numel(const Conv2dShape& shape, Device device,
                                               const ConvAlgo& algo = {});
// dw (and dbias, when defined) = gradients of the filters (and bias). With input.scale
// defined, x is read through that transform (the forward's input), and dw must be f32.
struct Conv2dBackwardFilterOperands {
  Tensor x, dy;
  Tensor dw;
  Tensor dbias = {};  // f32[K] or undefined
  // f32 with conv2d_backward_filter_workspace_numel elements (may be undefined when that is 0).
  Tensor workspace;
  Tensor split_counters = {};  // as the forward's (pass backward_filter)
  // GradWrite::accumulate adds to what dw/dbias hold (gradient accumulation over micro-batches).
  GradWrite write = GradWrite::overwrite;
};
void conv2d_backward_filter(const Conv2dShape& shape, Conv2dBackwardFilterOperands operands,
                            Stream& stream, const ConvAlgo& algo = {},
                            const ConvInputAffine& input = {});

// The CUDA algorithms worth timing for `problem` on `device`, the heuristic's first
// (cuda::conv2d_candidates); none on the CPU, which has one way to run a convolution.
std::vector<ConvAlgo> conv2d_algo_candidates(const ConvProblem& problem, Device device);

// Linear layers are pointwise convolutions over rows: x [rows, in], w [out, in], y [rows, out].
struct LinearForwardOperands {
  Tensor x, w;
  Tensor bias = {};  // f32[out] or undefined
  Tensor y;
};
void linear_forward(LinearForwardOperands operands, Stream& stream);
struct LinearBackwardDataOperands {
  Tensor dy, w;
  Tensor dx;
};
void linear_backward_data(LinearBackwardDataOperands operands, Stream& stream);
// x [rows, in_features], y [rows, out_features].
struct LinearShape {
  int64_t rows = 0;
  int64_t in_features = 0;
  int64_t out_features = 0;
};
// The workspace of the pointwise convolution linear_backward_weight runs.
int64_t linear_backward_weight_workspace_numel(const LinearShape& shape, Device device);
// As conv2d_backward_filter's operands.
struct LinearBackwardWeightOperands {
  Tensor x, dy;
  Tensor dw;
  Tensor dbias = {};
  Tensor workspace;  // of linear_backward_weight_workspace_numel elements
  GradWrite write = GradWrite::overwrite;
};
void linear_backward_weight(LinearBackwardWeightOperands operands, Stream& stream);

}  // namespace engine
