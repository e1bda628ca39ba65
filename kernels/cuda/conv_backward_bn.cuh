// conv2d_backward_data that also does the backward reduction of the BatchNorm + ReLU whose
// output the convolution read (args.batchnorm, kernels/args/conv.h): dx (plus dx_add, with a
// stored ReLU output) gated by the ReLU's mask, grad_sums and the parameter gradients, so that
// BatchNorm's backward is its element-wise pass alone (batchnorm_backward_reduce reads g and x
// back). Where the tensor-core engine's staged epilogue stores dx, it adds, gates and sums from
// its shared tile (gemm_batchnorm_grad.cuh); elsewhere (split K, the stride-phase and
// strided-pointwise paths, the direct epilogue, the fp32 SIMT engine, tensors without 16-byte
// rows, channels not a multiple of 8) the convolution runs as usual (adding dx_add in its
// epilogue where it can, else by the add's own map) and batchnorm_backward_reduce gates dx in
// place and sums it. Either way the caller gets the same outputs; conv2d_backward_data_bn_path
// says which ran.
#pragma once

#include "kernels/cuda/activation_ops.cuh"
#include "kernels/cuda/batchnorm_reduce.cuh"
#include "kernels/cuda/conv.cuh"
#include "kernels/cuda/gemm_batchnorm_grad.cuh"
#include "kernels/cuda/gemm_column_stats.cuh"

namespace engine::cuda {

// The workspace of conv2d_backward_data_bn (gemm_column_stats.cuh's layout): the
// convolution's split-K partials and their counters, batchnorm_backward_reduce's workspace (the
// fallback), then the epilogue's counters, its partial sums of g' and g' (x - mean)
// [row tiles, C] and its groups'. group_tiles: the row tiles a group (0: RowTileMerge's choice;
// tests force it).
inline EpilogueStatsWorkspace backward_data_bn_workspace(const Conv2dShape& shape,
                                                         const ConvLaunch& options,
                                                         int group_tiles = 0) {
  const GemmExtent e = backward_data_extent(shape);
  const int splits = is_strided_pointwise(shape) || splits_into_stride_phases(shape)
                         ? 1
                         : output_splits(e.m, e.n, e.k, options);
  return epilogue_stats_workspace(e.m, e.n, splits, group_tiles);
}

template <typename T>
StoreGatedWithBatchNormGrad<T> gated_grad_store(const Conv2dBackwardDataArgs& args,
                                                const EpilogueStatsRegions& regions,
                                                const EpilogueStatsWorkspace& sizes,
                                                int group_tiles, GatedSums sums) {
  const ConvDataGradBatchNorm& bn = args.batchnorm;
  return {.matrix = {static_cast<T*>(args.dx), args.shape.in_channels, nullptr, false},
          .x = static_cast<const T*>(bn.x),
          .relu_scale = bn.relu_scale,
          .relu_shift = bn.relu_shift,
          .relu_output = static_cast<const T*>(bn.relu_output),
          .addend = static_cast<const T*>(args.dx_add),
          .targets = {.part_dy = regions.part[0],
                      .part_dy_xmu = regions.part[1],
                      .group_dy = regions.groups[0],
                      .group_dy_xmu = regions.groups[1],
                      .merge = {.counters = regions.counters,
                                .max_groups = sizes.max_groups,
                                .group_tiles = group_tiles},
                      .grad = {.batch_stats = bn.batch_stats,
                               .grad_sums = bn.grad_sums,
                               .bias_grad = bn.bias_grad,
                               .weight_grad = bn.weight_grad,
                               .accumulate = bn.accumulate}},
          .reread = resolve_gated_sums(sums) == GatedSums::reread};
}

// Where the gating and the sums happen for these arguments: the epilogue exactly where the
// convolution would store dx through the staged epilogue of the tensor-core engine, as one GEMM
// without split K (conv2d_backward_data and mma_gemm_launch decide alike), with x and dx in
// 16-byte runs of whole rows of 8-channel groups (dx_add and relu_output too).
inline ConvStatsPath backward_data_bn_path(const Conv2dBackwardDataArgs& args,
                                           const ConvLaunch& options) {
  const Conv2dShape& shape = args.shape;
  if (args.dtype == DType::f32 && args.fp32_math != Fp32Math::tf32)
    return ConvStatsPath::separate_pass;  // the fp32 SIMT engine stores from registers
  if (is_strided_pointwise(shape) || splits_into_stride_phases(shape))
    return ConvStatsPath::separate_pass;  // their stores scatter over stride cells or phases
  const GemmExtent e = backward_data_extent(shape);
  if (e.m == 0 || output_splits(e.m, e.n, e.k, options) > 1 ||
      resolve_epilogue(options.gemm.epilogue) != GemmEpilogue::staged)
    return ConvStatsPath::separate_pass;
  bool fits = false;
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    fits = gated_grad_store<T>(args, {}, {}, 0, GatedSums::staged).vector_fits();
  });
  return fits ? ConvStatsPath::epilogue : ConvStatsPath::separate_pass;
}

// The epilogue path: the data gradient's one GEMM (pointwise rows or the gather) on the
// tensor-core engine of T, storing through the gated store. Only these engines are
// instantiated: the fp32 SIMT engine always takes the fallback.
template <typename T>
void gated_backward_data_gemm(const Conv2dBackwardDataArgs& args, const ConvLaunch& options,
                              const StoreGatedWithBatchNormGrad<T>& store, cudaStream_t stream) {
  using Math = std::conditional_t<std::is_same_v<T, float>, Tf32Mma, Bf16Mma>;
  const Conv2dShape& shape = args.shape;
  const GemmExtent e = backward_data_extent(shape);
  check_gemm_dims(e.m, e.n, e.k);
  const T* dy = static_cast<const T*>(args.dy);
  const T* w = static_cast<const T*>(args.w);
  if (shape.is_pointwise()) {
    mma_gemm_launch<Math>(e.m, e.n, e.k, KContiguousOperand<T>{dy, shape.out_channels},
                          RowContiguousOperand<T>{w, shape.in_channels}, store, 1, stream,
                          options.gemm);
  } else {
    mma_gemm_launch<Math>(e.m, e.n, e.k, ConvDataGradOutput<T>{dy, shape},
                          ConvDataGradFilter<T>{w, shape}, store, 1, stream, options.gemm);
  }
}

// The entry point with its launch options (the SIMT tests force tiles, epilogues, splits and
// the merge's groups). workspace: backward_data_bn_workspace(shape, options,
// group_tiles).total() floats, zeroed before first use.
void conv2d_backward_data_bn(const Conv2dBackwardDataArgs& args, cudaStream_t stream,
                             const ConvLaunch& options, int group_tiles = 0);

// Both kinds of entry point are defined by one translation unit of a program
// (conv_backward_bn.cu, or the SIMT tests' simt_conv_kernels.cpp); the others that include this
// header define ENGINE_CONV_BATCHNORM_ENTRY_POINTS_ELSEWHERE (see conv.cuh's
// ENGINE_CONV_ENTRY_POINTS_ELSEWHERE).
#ifndef ENGINE_CONV_BATCHNORM_ENTRY_POINTS_ELSEWHERE

void conv2d_backward_data_bn(const Conv2dBackwardDataArgs& args, cudaStream_t stream,
                             const ConvLaunch& options, int group_tiles) {
  const ConvDataGradBatchNorm& bn = args.batchnorm;
  ENGINE_REQUIRE(bn.active(), "conv2d_backward_data_bn: no BatchNorm input x");
  ENGINE_REQUIRE(bn.batch_stats != nullptr && bn.grad_sums != nullptr,
                 "conv2d_backward_data_bn: needs batch_stats and grad_sums");
  ENGINE_REQUIRE(
      (bn.relu_scale != nullptr && bn.relu_shift != nullptr) != (bn.relu_output != nullptr),
      "conv2d_backward_data_bn: needs the ReLU's relu_scale and relu_shift, or its "
      "relu_output (one of them)");
  ENGINE_REQUIRE(args.dx_add == nullptr || bn.relu_output != nullptr,
                 "conv2d_backward_data_bn: dx_add needs the ReLU's relu_output");
  ENGINE_REQUIRE(args.workspace != nullptr,
                 "conv2d_backward_data_bn: needs conv2d_backward_data_bn_workspace_bytes of "
                 "workspace");
  const EpilogueStatsWorkspace sizes = backward_data_bn_workspace(args.shape, options, group_tiles);
  const EpilogueStatsRegions regions = epilogue_stats_regions(sizes, args.workspace);
  if (backward_data_bn_path(args, options) == ConvStatsPath::epilogue) {
    dispatch_device_dtype(args.dtype, [&]<typename T>() {
      gated_backward_data_gemm<T>(
          args, options,
          gated_grad_store<T>(args, regions, sizes, group_tiles, options.gemm.gated_sums), stream);
    });
    return;
  }
  // The plain pass through conv.cu's entry point: its kernels are instantiated there only.
  Conv2dBackwardDataArgs conv = args;
  conv.batchnorm = {};
  conv.workspace = regions.split_partials;
  conv.split_counters = regions.split_counters;
  conv.algo = options;
  // dx_add by the add's own map where the GEMM cannot add it as it stores (split K, the
  // strided paths): AddOp's bits are StoreToMatrixAdding's.
  const bool add_after = conv.dx_add != nullptr && !conv2d_backward_data_adds(conv);
  if (add_after) conv.dx_add = nullptr;
  conv2d_backward_data(conv, stream);
  if (add_after) {
    const Conv2dShape& s = args.shape;
    dispatch_device_dtype(args.dtype, [&]<typename T>() {
      launch_map2(s.batch * s.in_h * s.in_w * s.in_channels, AddOp<T, false>{},
                  static_cast<T*>(args.dx), static_cast<const T*>(args.dx),
                  static_cast<const T*>(args.dx_add), stream);
    });
  }
  // The reduce gates dx in place (relu_grad = dy: each element read before it is written).
  batchnorm_backward_reduce({.dtype = args.dtype,
                             .dy = args.dx,
                             .x = bn.x,
                             .batch_stats = bn.batch_stats,
                             .grad_sums = bn.grad_sums,
                             .rows = backward_data_extent(args.shape).m,
                             .channels = args.shape.in_channels,
                             .workspace = regions.batchnorm_scratch,
                             .relu_output = bn.relu_output,
                             .relu_scale = bn.relu_scale,
                             .relu_shift = bn.relu_shift,
                             .relu_grad = args.dx,
                             .bias_grad = bn.bias_grad,
                             .weight_grad = bn.weight_grad,
                             .accumulate = bn.accumulate},
                            stream, ChannelReduceLaunch{});
}

// ---------------------------------------------------------------------------------------
// Entry points (declared in conv.h)

size_t conv2d_backward_data_bn_workspace_bytes(const Conv2dShape& shape, const ConvAlgo& algo) {
  return static_cast<size_t>(backward_data_bn_workspace(shape, algo).total()) * sizeof(float);
}

ConvStatsPath conv2d_backward_data_bn_path(const Conv2dBackwardDataArgs& args) {
  return backward_data_bn_path(args, args.algo);
}

void conv2d_backward_data_bn(const Conv2dBackwardDataArgs& args, cudaStream_t stream) {
  conv2d_backward_data_bn(args, stream, args.algo);
}

#endif  // ENGINE_CONV_BATCHNORM_ENTRY_POINTS_ELSEWHERE

}  // namespace engine::cuda
