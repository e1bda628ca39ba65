// conv2d forward that also gives BatchNorm's statistics of its output (stats = f32[2C+1],
// kernels/ops/batchnorm.h), so that a training BatchNorm after the convolution skips its
// statistics pass (batchnorm_stats reads all of y back). Where the tensor-core engine's staged
// epilogue stores y, it computes them from its shared tile (gemm_column_stats.cuh); elsewhere
// (split K, the direct epilogue, the fp32 SIMT engine, a y without 16-byte rows) the
// convolution runs as usual and batchnorm_stats reads y after it. Either way the caller gets
// the statistics of y as stored, and conv2d_forward_stats_path says which ran.
#pragma once

#include "kernels/cuda/batchnorm_reduce.cuh"
#include "kernels/cuda/conv.cuh"
#include "kernels/cuda/gemm_column_stats.cuh"

namespace engine::cuda {

// The workspace of conv2d_forward_stats (gemm_column_stats.cuh's layout): the convolution's
// own (split-K partials and their counters), batchnorm_stats' (the separate pass), then the
// epilogue's counters, its partial means and m2 [row tiles, C] and its groups'. group_tiles:
// the row tiles a group (0: gemm_column_stats.cuh's choice).
using ForwardStatsWorkspace = EpilogueStatsWorkspace;
inline ForwardStatsWorkspace forward_stats_workspace(const Conv2dShape& shape,
                                                     const ConvLaunch& options,
                                                     int group_tiles = 0) {
  const GemmExtent e = forward_extent(shape);
  return epilogue_stats_workspace(e.m, e.n, output_splits(e.m, e.n, e.k, options), group_tiles);
}

// Where the statistics come from for these arguments: the epilogue exactly where the
// convolution stores y through the staged epilogue of the tensor-core engine without split K
// (split_output_gemm and mma_gemm_launch decide alike).
inline ConvStatsPath forward_stats_path(const Conv2dForwardArgs& args, const ConvLaunch& options) {
  if (args.dtype == DType::f32 && args.fp32_math != Fp32Math::tf32)
    return ConvStatsPath::separate_pass;  // the fp32 SIMT engine stores from registers
  const GemmExtent e = forward_extent(args.shape);
  const int splits = args.bias == nullptr ? output_splits(e.m, e.n, e.k, options) : 1;
  if (splits > 1 || resolve_epilogue(options.gemm.epilogue) != GemmEpilogue::staged)
    return ConvStatsPath::separate_pass;
  bool fits = false;
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    fits = StoreToMatrix<T>{static_cast<T*>(args.y), e.n, nullptr, false}.vector_fits();
  });
  return fits ? ConvStatsPath::epilogue : ConvStatsPath::separate_pass;
}

// The entry point with its launch options (the SIMT tests force tiles, epilogues, splits and
// the merge's groups). workspace: forward_stats_workspace(shape, options, group_tiles).total()
// floats, zeroed before first use.
void conv2d_forward_stats(const Conv2dForwardArgs& args, cudaStream_t stream,
                          const ConvLaunch& options, int group_tiles = 0);

// Both kinds of entry point are defined by one translation unit of a program (conv.cu, or the
// SIMT tests' simt_conv_kernels.cpp); the others that include this header define
// ENGINE_CONV_BATCHNORM_ENTRY_POINTS_ELSEWHERE (see conv.cuh's ENGINE_CONV_ENTRY_POINTS_ELSEWHERE).
#ifndef ENGINE_CONV_BATCHNORM_ENTRY_POINTS_ELSEWHERE

void conv2d_forward_stats(const Conv2dForwardArgs& args, cudaStream_t stream,
                          const ConvLaunch& options, int group_tiles) {
  ENGINE_REQUIRE(args.stats != nullptr, "conv2d_forward_stats: no stats to write");
  ENGINE_REQUIRE(args.workspace != nullptr,
                 "conv2d_forward_stats: needs conv2d_forward_stats_workspace_bytes of workspace");
  ENGINE_REQUIRE(args.stats_finalize.batch_stats == nullptr || args.stats_sums != nullptr,
                 "conv2d_forward_stats: finalizing needs the sums");
  const GemmExtent e = forward_extent(args.shape);
  BatchNormFinalizeSumsArgs finalize = args.stats_finalize;
  finalize.sums = args.stats_sums;
  finalize.channels = e.n;
  const ForwardStatsWorkspace sizes = forward_stats_workspace(args.shape, options, group_tiles);
  const EpilogueStatsRegions regions = epilogue_stats_regions(sizes, args.workspace);
  Conv2dForwardArgs conv = args;
  conv.stats = nullptr;
  if (forward_stats_path(args, options) == ConvStatsPath::epilogue) {
    dispatch_device_dtype(args.dtype, [&]<typename T>() {
      const StoreWithColumnStats<T> store{
          .matrix = {static_cast<T*>(args.y), e.n, args.bias, false},
          .targets = {.part_mean = regions.part[0],
                      .part_m2 = regions.part[1],
                      .group_mean = regions.groups[0],
                      .group_m2 = regions.groups[1],
                      .merge = {.counters = regions.counters,
                                .max_groups = sizes.max_groups,
                                .group_tiles = group_tiles},
                      .stats = args.stats,
                      .sums = args.stats_sums,
                      .finalize = finalize}};
      // (The epilogue path is the tensor cores' only: forward_stats_path.)
      forward_gemm<T, std::decay_t<decltype(store)>, true>(conv, options, store, 1, stream);
    });
    return;
  }
  conv.workspace = regions.split_partials;
  conv.split_counters = regions.split_counters;
  conv2d_forward(conv, stream, options);
  batchnorm_stats(BatchNormStatsArgs{.dtype = args.dtype,
                                     .x = args.y,
                                     .rows = e.m,
                                     .channels = e.n,
                                     .stats = args.stats,
                                     .workspace = regions.batchnorm_scratch,
                                     .sums = args.stats_sums,
                                     .finalize = finalize},
                  stream, ChannelReduceLaunch{});
}

// ---------------------------------------------------------------------------------------
// Entry points (declared in conv.h)

size_t conv2d_forward_stats_workspace_bytes(const Conv2dShape& shape, const ConvAlgo& algo) {
  return static_cast<size_t>(forward_stats_workspace(shape, algo).total()) * sizeof(float);
}

ConvStatsPath conv2d_forward_stats_path(const Conv2dForwardArgs& args) {
  return forward_stats_path(args, args.algo);
}

void conv2d_forward_stats(const Conv2dForwardArgs& args, cudaStream_t stream) {
  conv2d_forward_stats(args, stream, args.algo);
}

#endif  // ENGINE_CONV_BATCHNORM_ENTRY_POINTS_ELSEWHERE

}  // namespace engine::cuda
