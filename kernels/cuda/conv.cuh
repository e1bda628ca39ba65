// conv2d forward / backward-data / backward-filter as implicit GEMMs over the gathers in
// conv_operands.cuh, on the engines of gemm_tiles.cuh. Pointwise (1x1, stride 1, no
// padding) convolutions and linear layers skip the gathers: they are plain GEMMs on NHWC rows.
#pragma once

#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_channel_padding.cuh"
#include "kernels/cuda/conv_input_transform.cuh"
#include "kernels/cuda/conv_operands.cuh"
#include "kernels/cuda/conv_strided_data_grad.cuh"
#include "kernels/cuda/gemm_epilogue.cuh"
#include "kernels/cuda/gemm_operands.cuh"
#include "kernels/cuda/gemm_tiles.cuh"
#include "kernels/error.h"

namespace engine::cuda {

// Launch options (kernels/conv_algo.h): the split count (0: choose_split_k), the tensor-core
// engine's epilogue and tile. The tuner picks them per problem; tests force splits to cover
// the split-K path with small shapes.
using ConvLaunch = ConvAlgo;

// One split choice for every engine: they tile C alike.
static_assert(kFp32TileM == kMmaTileM && kFp32TileN == kMmaTileN);

// The filter gradient's output (filters x taps) is a few output tiles wherever the reduction
// over pixels is long (the stem: 64 x 147, 2 tiles over 1.6 M pixels at 224 px, batch 128;
// layer1's 64-filter convolutions: 1 to 5 tiles over 401 k pixels), and its fp32 partials are
// small (splits x filters x taps), so it splits as far as it takes to fill the GPU: output
// splits' default cap of 32 left the stem at 64 blocks on 132 SMs.
constexpr int kFilterGradMaxSplits = 264;

inline int filter_grad_splits(const Conv2dShape& shape, const ConvLaunch& options) {
  if (options.split_k > 0) return options.split_k;
  return choose_split_k(shape.out_channels, shape.gemm_k(), shape.gemm_m(), kFp32TileM, kFp32TileN,
                        kSplitTargetBlocks, kMinKPerSplit, kFilterGradMaxSplits);
}

inline size_t filter_grad_workspace_bytes(const Conv2dShape& shape, int splits) {
  const int64_t filter = shape.out_channels * shape.gemm_k();
  const int64_t bias = column_sum_slices(shape.gemm_m()) * shape.out_channels;
  return static_cast<size_t>(splits * filter + bias) * sizeof(float);
}

// The filter gradient with x padded to `channels` (conv_channel_padding.cuh) for an engine of
// `vector` elements per 16 bytes: its workspace holds the padded x, the padded gradient (f32)
// and the padded shape's own workspace, in that order, each a multiple of 16 bytes.
struct PaddedFilterGradLayout {
  Conv2dShape padded;
  int splits;  // the padded shape's
  size_t x_bytes, dw_bytes, inner_bytes;
  PaddedFilterGradLayout(const Conv2dShape& shape, int64_t channels, int vector,
                         const ConvLaunch& options)
      : padded(with_input_channels(shape, channels)),
        splits(filter_grad_splits(padded, options)),
        x_bytes(static_cast<size_t>(shape.batch * shape.in_h * shape.in_w * channels) *
                (16 / vector)),
        dw_bytes(static_cast<size_t>(shape.out_channels * padded.gemm_k()) * sizeof(float)),
        inner_bytes(filter_grad_workspace_bytes(padded, splits)) {}
  size_t bytes() const { return x_bytes + dw_bytes + inner_bytes; }
};

// The vectors of the tensor-core engines (tf32's 4 floats, bf16's 8), for which a workspace is
// sized without knowing which engine will run.
constexpr int kTensorCoreVectors[] = {4, 8};

// The 16-byte vector of the engine that runs tensors of `dtype` under `math`: bf16's 8, tf32's
// 4, or 0 for the fp32 SIMT engine (element loads only).
inline int tensor_core_vector(DType dtype, Fp32Math math) {
  if (dtype == DType::bf16) return 8;
  return math == Fp32Math::tf32 ? 4 : 0;
}

// The channels the filter gradient of `args` reads x with: padded_channels for the tensor-core
// engine that runs it, into an f32 gradient (ResNet's master weights) without an input
// transform; C itself everywhere else (the fp32 SIMT engine loads elements either way).
inline int64_t filter_grad_channels(const Conv2dBackwardFilterArgs& args,
                                    const ConvLaunch& options) {
  const int64_t channels = args.shape.in_channels;
  const int vector = tensor_core_vector(args.dtype, args.fp32_math);
  if (vector == 0 || args.dw_dtype != DType::f32 || args.input_transform.active()) return channels;
  return padded_channels(channels, vector, options.padding);
}

// ---------------------------------------------------------------------------------------
// Launchers

// Split-K for the passes whose output is the GEMM's M x N (forward: pixels x filters; input
// gradient: input pixels x channels): a small batch leaves layer3/4 with fewer output tiles
// than the GPU has SMs (resnet50 at 224 px, batch 32: 52 tiles at layer4 for 132 SMs), so K
// is split over blockIdx.z into fp32 partials that splitk_reduce_kernel sums in split order.
// A forward with a bias does not split (the reduction adds no bias; no ResNet conv has one).
inline int output_splits(int64_t m, int64_t n, int64_t k, const ConvLaunch& options) {
  if (options.split_k > 0) return options.split_k;
  return choose_split_k(m, n, k, kFp32TileM, kFp32TileN);
}

inline size_t output_split_workspace_bytes(int64_t m, int64_t n, int splits) {
  return splits > 1 ? static_cast<size_t>(splits) * static_cast<size_t>(m * n) * sizeof(float) : 0;
}

// The GEMM extents of the two passes.
struct GemmExtent {
  int64_t m, n, k;
};
inline GemmExtent forward_extent(const Conv2dShape& shape) {
  return {shape.gemm_m(), shape.out_channels, shape.gemm_k()};
}
inline GemmExtent backward_data_extent(const Conv2dShape& shape) {
  return {shape.batch * shape.in_h * shape.in_w, shape.in_channels,
          shape.kernel_h * shape.kernel_w * shape.out_channels};
}

// Runs `gemm(store, splits)` storing into `out` (rows x cols, row-major, TOut) directly, or
// with split K into the workspace's partials and their sum into out: by each tile's last split
// to finish where `counters` are given (split_sum_counters of them, zeroed once), else by a
// second launch. accumulate: out += the product.
template <typename TOut, typename Gemm>
void split_gemm(int64_t rows, int64_t cols, int splits, TOut* out, bool accumulate,
                float* workspace, unsigned* counters, cudaStream_t stream, Gemm&& gemm) {
  if (splits == 1) {
    gemm(StoreToMatrix<TOut>{out, cols, nullptr, accumulate}, 1);
    return;
  }
  const SplitSum sum{out, std::is_same_v<TOut, __nv_bfloat16>, accumulate, counters,
                     static_cast<int>(split_sum_group(splits))};
  gemm(StoreSplitPartial{workspace, rows, cols, sum}, splits);
  if (counters == nullptr)
    splitk_reduce_launch(splits, rows * cols, workspace, out, accumulate, stream);
}

// split_gemm for the output of a pass (no accumulation), or with a bias unsplit.
// workspace: null (no split) or output_split_workspace_bytes(m, n, splits) bytes.
template <typename T, typename Gemm>
void split_output_gemm(const GemmExtent& e, T* out, const float* bias, float* workspace,
                       unsigned* counters, const ConvLaunch& options, cudaStream_t stream,
                       Gemm&& gemm) {
  const int splits =
      workspace != nullptr && bias == nullptr ? output_splits(e.m, e.n, e.k, options) : 1;
  if (splits == 1) {
    gemm(StoreToMatrix<T>{out, e.n, bias, false}, 1);
    return;
  }
  split_gemm(e.m, e.n, splits, out, false, workspace, counters, stream, gemm);
}

// The GEMM of a pass whose input x is read through an active input transform
// (conv_input_transform.cuh): x's operand as the pass reads it plain (im2col, or pointwise
// rows), wrapped. Separate instantiations, so a convolution without a transform runs exactly
// the kernels it ran before. gemm(operand) launches the pass's GEMM on the operand; the
// forward's operand has pixel rows (kPixelRows), the filter gradient's (tap, channel) rows.
template <bool kPixelRows, typename T, typename Gemm>
void transformed_input_gemm(const Conv2dShape& shape, const T* x,
                            const ConvInputTransform& transform, Gemm&& gemm) {
  const int64_t channels = shape.in_channels;
  using Pointwise = std::conditional_t<kPixelRows, KContiguousOperand<T>, RowContiguousOperand<T>>;
  if (shape.is_pointwise()) {
    gemm(TransformedInput(Pointwise{x, channels}, transform, channels));
  } else {
    gemm(TransformedInput(Im2colOperand<T, kPixelRows>{x, shape}, transform, channels));
  }
}

// The forward's GEMM of T into `store` with `splits` K-splits: the pointwise path or the
// gather, x read plain or through its input transform (also run by conv2d_forward_stats with
// its statistics store: conv2 and conv3 of a bottleneck read the previous convolution's raw
// output and give the next BatchNorm its statistics). kTensorCores: the tensor-core engine
// only (bf16, or f32 as tf32), for a store the fp32 SIMT engine never runs, so that its kernels
// are not compiled for nothing.
template <typename T, typename Store, bool kTensorCores = false>
void forward_gemm(const Conv2dForwardArgs& args, const ConvLaunch& options, const Store& store,
                  int splits, cudaStream_t stream) {
  const Conv2dShape& shape = args.shape;
  const GemmExtent e = forward_extent(shape);
  const T* x = static_cast<const T*>(args.x);
  const KContiguousOperand<T> filters{static_cast<const T*>(args.w), e.k};
  const auto gemm = [&](const auto& input) {
    if constexpr (kTensorCores) {
      using Math = std::conditional_t<std::is_same_v<T, float>, Tf32Mma, Bf16Mma>;
      mma_gemm_launch<Math>(e.m, e.n, e.k, input, filters, store, splits, stream, options.gemm);
    } else {
      gemm_launch<T>(e.m, e.n, e.k, input, filters, store, splits, stream, args.fp32_math,
                     options.gemm);
    }
  };
  if (args.input_transform.active()) {
    transformed_input_gemm<true>(shape, x, args.input_transform, gemm);
  } else if (shape.is_pointwise()) {
    gemm(KContiguousOperand<T>{x, e.k});
  } else {
    gemm(ConvForwardInput<T>{x, shape});
  }
}

// The entry points with their launch options (the SIMT tests force tiles, epilogues and split K
// through them); conv.h declares those without.
void conv2d_forward(const Conv2dForwardArgs& args, cudaStream_t stream, const ConvLaunch& options);
void conv2d_backward_data(const Conv2dBackwardDataArgs& args, cudaStream_t stream,
                          const ConvLaunch& options);
void conv2d_backward_filter(const Conv2dBackwardFilterArgs& args, cudaStream_t stream,
                            const ConvLaunch& options);

// Both kinds of entry point are defined by one translation unit of a program: conv.cu, or the
// SIMT tests' simt_conv_kernels.cpp (tests/kernels), which compiles the engine once for the
// four conv suites. Another that includes this header defines ENGINE_CONV_ENTRY_POINTS_ELSEWHERE
// (conv_backward_bn.cu, kept apart for compile time; each suite): a function that launches
// kernels instantiates them wherever it is parsed, called or not, and nvcc compiles every
// instantiated kernel (these put 220 of conv.cu's 249 kernels in conv_backward_bn.cu's object
// too).
#ifndef ENGINE_CONV_ENTRY_POINTS_ELSEWHERE

void conv2d_forward(const Conv2dForwardArgs& args, cudaStream_t stream, const ConvLaunch& options) {
  ENGINE_REQUIRE(args.stats == nullptr,
                 "conv2d_forward: statistics go through conv2d_forward_stats");
  const GemmExtent e = forward_extent(args.shape);
  float* workspace = static_cast<float*>(args.workspace);
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    split_output_gemm(e, static_cast<T*>(args.y), args.bias, workspace, args.split_counters,
                      options, stream, [&](const auto& store, int splits) {
                        forward_gemm<T>(args, options, store, splits, stream);
                      });
  });
}

// Whether the input gradient stores dx as one GEMM without split K (the path that can add
// args.dx_add in its epilogue): not the strided pointwise or stride-phase paths, no split.
inline bool backward_data_adds(const Conv2dBackwardDataArgs& args, const ConvLaunch& options) {
  const Conv2dShape& shape = args.shape;
  if (is_strided_pointwise(shape) || splits_into_stride_phases(shape)) return false;
  const GemmExtent e = backward_data_extent(shape);
  return args.workspace == nullptr || output_splits(e.m, e.n, e.k, options) == 1;
}

// The input gradient's GEMM into `store` (pointwise rows or the gather), K split `splits` ways.
template <typename T, typename Store>
void backward_data_gemm(const Conv2dBackwardDataArgs& args, const ConvLaunch& options,
                        const Store& store, int splits, cudaStream_t stream) {
  const Conv2dShape& shape = args.shape;
  const GemmExtent e = backward_data_extent(shape);
  const T* dy = static_cast<const T*>(args.dy);
  const T* w = static_cast<const T*>(args.w);
  if (shape.is_pointwise()) {
    gemm_launch<T>(e.m, e.n, e.k, KContiguousOperand<T>{dy, shape.out_channels},
                   RowContiguousOperand<T>{w, shape.in_channels}, store, splits, stream,
                   args.fp32_math, options.gemm);
  } else {
    gemm_launch<T>(e.m, e.n, e.k, ConvDataGradOutput<T>{dy, shape}, ConvDataGradFilter<T>{w, shape},
                   store, splits, stream, args.fp32_math, options.gemm);
  }
}

void conv2d_backward_data(const Conv2dBackwardDataArgs& args, cudaStream_t stream,
                          const ConvLaunch& options) {
  ENGINE_REQUIRE(!args.batchnorm.active(),
                 "conv2d_backward_data: the BatchNorm's backward goes through "
                 "conv2d_backward_data_bn");
  ENGINE_REQUIRE(args.dx_add == nullptr || backward_data_adds(args, options),
                 "conv2d_backward_data: dx_add where the epilogue cannot add it "
                 "(conv2d_backward_data_adds)");
  const Conv2dShape& shape = args.shape;
  const GemmExtent e = backward_data_extent(shape);
  float* workspace = static_cast<float*>(args.workspace);
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* dy = static_cast<const T*>(args.dy);
    const T* w = static_cast<const T*>(args.w);
    if (args.dx_add != nullptr) {
      const StoreToMatrixAdding<T> store{{static_cast<T*>(args.dx), e.n, nullptr, false},
                                         static_cast<const T*>(args.dx_add)};
      backward_data_gemm<T>(args, options, store, 1, stream);
      return;
    }
    if (is_strided_pointwise(shape)) {
      // One GEMM over dy's pixels, its store filling whole stride cells (no split: ResNet's
      // strided 1x1 layers have hundreds of output tiles at training batches).
      gemm_launch<T>(shape.gemm_m(), shape.in_channels, shape.out_channels,
                     KContiguousOperand<T>{dy, shape.out_channels},
                     RowContiguousOperand<T>{w, shape.in_channels},
                     StoreToStrideCells<T>{static_cast<T*>(args.dx), ConvGeometry(shape)}, 1,
                     stream, args.fp32_math, options.gemm);
      return;
    }
    if (splits_into_stride_phases(shape)) {
      // A GEMM per stride phase over its pixels and taps (conv_strided_data_grad.cuh), no split.
      for (const StridePhase& phase : stride_phases(shape)) {
        gemm_launch<T>(phase.pixels(shape.batch), shape.in_channels,
                       phase.taps() * shape.out_channels, PhaseDataGradOutput<T>{dy, phase},
                       PhaseDataGradFilter<T>{w, phase},
                       StoreToPhasePixels<T>{static_cast<T*>(args.dx), phase}, 1, stream,
                       args.fp32_math, options.gemm);
      }
      return;
    }
    split_output_gemm(e, static_cast<T*>(args.dx), nullptr, workspace, args.split_counters, options,
                      stream, [&](const auto& store, int splits) {
                        backward_data_gemm<T>(args, options, store, splits, stream);
                      });
  });
}

// The bias gradient, dy's column sums, through `partials` (column_sum_slices x filters floats).
inline void filter_grad_bias(const Conv2dBackwardFilterArgs& args, float* partials,
                             cudaStream_t stream) {
  if (args.dbias == nullptr) return;
  const int64_t pixels = args.shape.gemm_m();
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    column_sum_launch(pixels, args.shape.out_channels, static_cast<const T*>(args.dy),
                      column_sum_slices(pixels), partials, args.dbias, args.accumulate, stream);
  });
}

// The filter gradient through x padded to `channels`: the pad, the padded shape's gradient into
// the workspace (overwritten, unpadded, no bias), then its real channels into dw.
void conv2d_backward_filter_padded(const Conv2dBackwardFilterArgs& args, int64_t channels,
                                   cudaStream_t stream, const ConvLaunch& options) {
  const Conv2dShape& shape = args.shape;
  const PaddedFilterGradLayout layout(shape, channels,
                                      tensor_core_vector(args.dtype, args.fp32_math), options);
  std::byte* workspace = static_cast<std::byte*>(args.workspace);
  float* padded_dw = reinterpret_cast<float*>(workspace + layout.x_bytes);
  Conv2dBackwardFilterArgs padded = args;
  padded.shape = layout.padded;
  padded.x = workspace;
  padded.dw = padded_dw;
  padded.dbias = nullptr;
  padded.accumulate = false;
  padded.workspace = workspace + layout.x_bytes + layout.dw_bytes;
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    pad_channels_launch(shape.batch * shape.in_h * shape.in_w, shape.in_channels, channels,
                        static_cast<const T*>(args.x), reinterpret_cast<T*>(workspace), stream);
  });
  ConvLaunch as_is = options;
  as_is.padding = ChannelPadding::none;
  conv2d_backward_filter(padded, stream, as_is);
  unpad_filter_grad_launch(shape.out_channels * shape.kernel_h * shape.kernel_w, shape.in_channels,
                           channels, padded_dw, static_cast<float*>(args.dw), args.accumulate,
                           stream);
  filter_grad_bias(args,
                   static_cast<float*>(padded.workspace) +
                       layout.splits * shape.out_channels * layout.padded.gemm_k(),
                   stream);
}

void conv2d_backward_filter(const Conv2dBackwardFilterArgs& args, cudaStream_t stream,
                            const ConvLaunch& options) {
  const Conv2dShape& shape = args.shape;
  if (args.input_transform.active() && args.dw_dtype != DType::f32)
    throw std::invalid_argument("conv2d_backward_filter: an input transform needs an f32 dw");
  if (const int64_t channels = filter_grad_channels(args, options); channels != shape.in_channels) {
    conv2d_backward_filter_padded(args, channels, stream, options);
    return;
  }
  const int splits = filter_grad_splits(shape, options);
  const int64_t k_out = shape.out_channels, taps = shape.gemm_k(), pixels = shape.gemm_m();
  float* workspace = static_cast<float*>(args.workspace);
  dispatch_device_dtype(args.dtype, [&]<typename T>() {
    const T* x = static_cast<const T*>(args.x);
    const T* dy = static_cast<const T*>(args.dy);
    const RowContiguousOperand<T> grad_out{dy, k_out};
    auto gemm = [&](const auto& store, int split_count) {
      // To fp32 master weights (or their split partials) only, checked above: a bf16 dw store
      // would be more kernels for nvcc to compile that ResNet never runs.
      using Store = std::decay_t<decltype(store)>;
      if constexpr (!std::is_same_v<Store, StoreToMatrix<__nv_bfloat16>>) {
        if (args.input_transform.active()) {
          transformed_input_gemm<false>(shape, x, args.input_transform, [&](const auto& input) {
            gemm_launch<T>(k_out, taps, pixels, grad_out, input, store, split_count, stream,
                           args.fp32_math, options.gemm);
          });
          return;
        }
      }
      if (shape.is_pointwise()) {
        gemm_launch<T>(k_out, taps, pixels, grad_out, RowContiguousOperand<T>{x, taps}, store,
                       split_count, stream, args.fp32_math, options.gemm);
      } else {
        gemm_launch<T>(k_out, taps, pixels, grad_out, ConvFilterGradInput<T>{x, shape}, store,
                       split_count, stream, args.fp32_math, options.gemm);
      }
    };
    dispatch_device_dtype(args.dw_dtype, [&]<typename TGrad>() {
      // Without a split there is nothing to sum: stored (and accumulated) straight into dw.
      split_gemm(k_out, taps, splits, static_cast<TGrad*>(args.dw), args.accumulate, workspace,
                 args.split_counters, stream, gemm);
    });
  });
  filter_grad_bias(args, workspace + splits * k_out * taps, stream);
}

// ---------------------------------------------------------------------------------------
// Entry points (declared in conv.h)

size_t conv2d_backward_filter_workspace_bytes(const Conv2dShape& shape, const ConvAlgo& algo) {
  size_t bytes = filter_grad_workspace_bytes(shape, filter_grad_splits(shape, algo));
  // Enough for the padded path of either tensor-core engine, where the algorithm pads.
  for (const int vector : kTensorCoreVectors) {
    const int64_t channels = padded_channels(shape.in_channels, vector, algo.padding);
    if (channels != shape.in_channels)
      bytes = std::max(bytes, PaddedFilterGradLayout(shape, channels, vector, algo).bytes());
  }
  return bytes;
}

size_t conv2d_forward_workspace_bytes(const Conv2dShape& shape, const ConvAlgo& algo) {
  const GemmExtent e = forward_extent(shape);
  return output_split_workspace_bytes(e.m, e.n, output_splits(e.m, e.n, e.k, algo));
}

size_t conv2d_backward_data_workspace_bytes(const Conv2dShape& shape, const ConvAlgo& algo) {
  if (is_strided_pointwise(shape) || splits_into_stride_phases(shape)) return 0;
  const GemmExtent e = backward_data_extent(shape);
  return output_split_workspace_bytes(e.m, e.n, output_splits(e.m, e.n, e.k, algo));
}

size_t conv2d_split_counters_bytes(const Conv2dShape& shape, ConvPass pass, const ConvAlgo& algo) {
  int64_t counters = 0;
  switch (pass) {
    case ConvPass::forward: {
      const GemmExtent e = forward_extent(shape);
      counters = split_sum_counters(e.m, e.n, output_splits(e.m, e.n, e.k, algo));
      break;
    }
    case ConvPass::backward_data: {
      if (is_strided_pointwise(shape) || splits_into_stride_phases(shape)) break;
      const GemmExtent e = backward_data_extent(shape);
      counters = split_sum_counters(e.m, e.n, output_splits(e.m, e.n, e.k, algo));
      break;
    }
    case ConvPass::backward_filter:
      counters =
          split_sum_counters(shape.out_channels, shape.gemm_k(), filter_grad_splits(shape, algo));
      for (const int vector : kTensorCoreVectors) {
        const Conv2dShape padded =
            with_input_channels(shape, padded_channels(shape.in_channels, vector, algo.padding));
        counters = std::max(counters, split_sum_counters(padded.out_channels, padded.gemm_k(),
                                                         filter_grad_splits(padded, algo)));
      }
      break;
  }
  return static_cast<size_t>(counters) * sizeof(unsigned);
}

std::vector<ConvAlgo> conv2d_candidates(const ConvProblem& problem) {
  const Conv2dShape& shape = problem.shape;
  // The GEMM whose output is tiled, and whether its K may be split (and how far).
  GemmExtent e = forward_extent(shape);
  bool splits = true;
  int64_t max_splits = 32;
  if (problem.pass == ConvPass::backward_data) {
    e = backward_data_extent(shape);
    splits = !is_strided_pointwise(shape) && !splits_into_stride_phases(shape);
  } else if (problem.pass == ConvPass::backward_filter) {
    e = {shape.out_channels, shape.gemm_k(), shape.gemm_m()};
    max_splits = 2 * kFilterGradMaxSplits;
  }
  const auto split_count = [&](const GemmExtent& extent, int tile_m, int tile_n) {
    if (!splits) return 1;
    return problem.pass == ConvPass::backward_filter
               ? choose_split_k(extent.m, extent.n, extent.k, tile_m, tile_n, kSplitTargetBlocks,
                                kMinKPerSplit, kFilterGradMaxSplits)
               : choose_split_k(extent.m, extent.n, extent.k, tile_m, tile_n);
  };
  std::vector<ConvAlgo> candidates;
  const auto add = [&](const GemmExtent& extent, GemmTile tile, int64_t split,
                       ChannelPadding padding) {
    if (split < 1 || split > max_splits || (split > 1 && extent.k / split < kMinKPerSplit / 2))
      return;
    ConvAlgo algo;
    algo.gemm.tile = tile;
    algo.split_k = static_cast<int>(split);
    algo.padding = padding;
    for (const ConvAlgo& seen : candidates) {
      if (seen == algo) return;
    }
    candidates.push_back(algo);
  };
  // Each tile with no split, the heuristic's split for that tile and twice it, over the GEMM
  // reading x with `in_channels`.
  constexpr std::pair<GemmTile, std::pair<int, int>> kTiles[] = {{GemmTile::t128x128, {128, 128}},
                                                                 {GemmTile::t128x64, {128, 64}},
                                                                 {GemmTile::t64x128, {64, 128}},
                                                                 {GemmTile::t64x64, {64, 64}}};
  // Only bf16's 16-byte path has several tiles; x read with channels not a multiple of 8 (the
  // stem's 3) takes element loads, on one tile.
  const auto has_tiles = [&](int64_t in_channels) {
    return problem.dtype == DType::bf16 && in_channels % 8 == 0 && shape.out_channels % 8 == 0;
  };
  const auto add_tiles = [&](const GemmExtent& extent, int64_t in_channels,
                             ChannelPadding padding) {
    const bool tiles = has_tiles(in_channels);
    for (const auto& [tile, size] : kTiles) {
      if (!tiles && tile != GemmTile::t128x128) continue;
      const GemmTile named = tiles ? tile : GemmTile::automatic;
      const int64_t split = split_count(extent, size.first, size.second);
      add(extent, named, 1, padding);
      add(extent, named, split, padding);
      add(extent, named, 2 * split, padding);
    }
  };
  // A tensor-core filter gradient whose x the 16-byte loads cannot take may read x padded to
  // their vector (conv_channel_padding.cuh): `padded` channels, or C where it cannot.
  const int vector = tensor_core_vector(problem.dtype, problem.math);
  const bool may_pad = problem.pass == ConvPass::backward_filter && vector != 0 &&
                       problem.fusion == ConvFusion::none;
  const auto read_channels = [&](ChannelPadding padding) {
    return may_pad ? padded_channels(shape.in_channels, vector, padding) : shape.in_channels;
  };
  const auto extent_with = [&](int64_t channels) {
    if (channels == shape.in_channels) return e;
    return GemmExtent{shape.out_channels, with_input_channels(shape, channels).gemm_k(),
                      shape.gemm_m()};
  };
  // The heuristic's choice, spelled out (the environment may pad).
  const int64_t heuristic_channels = read_channels(ChannelPadding::automatic);
  const GemmExtent heuristic = extent_with(heuristic_channels);
  add(heuristic,
      has_tiles(heuristic_channels) ? resolve_tile(GemmTile::automatic, heuristic.m, heuristic.n)
                                    : GemmTile::automatic,
      split_count(heuristic, kFp32TileM, kFp32TileN),
      heuristic_channels == shape.in_channels ? ChannelPadding::none : ChannelPadding::vector);
  add_tiles(e, shape.in_channels, ChannelPadding::none);
  if (const int64_t padded = read_channels(ChannelPadding::vector); padded != shape.in_channels)
    add_tiles(extent_with(padded), padded, ChannelPadding::vector);
  return candidates;
}

void conv2d_forward(const Conv2dForwardArgs& args, cudaStream_t stream) {
  conv2d_forward(args, stream, args.algo);
}
void conv2d_backward_data(const Conv2dBackwardDataArgs& args, cudaStream_t stream) {
  conv2d_backward_data(args, stream, args.algo);
}
bool conv2d_backward_data_adds(const Conv2dBackwardDataArgs& args) {
  return !args.batchnorm.active() && backward_data_adds(args, args.algo);
}
void conv2d_backward_filter(const Conv2dBackwardFilterArgs& args, cudaStream_t stream) {
  conv2d_backward_filter(args, stream, args.algo);
}

void conv_input_from_batchnorm(const ConvInputFromBatchNormArgs& args, cudaStream_t stream) {
  if (args.channels == 0) return;
  constexpr int kThreads = 256;
  launch(conv_input_from_batchnorm_kernel,
         dim3(static_cast<unsigned>((args.channels + kThreads - 1) / kThreads)), dim3(kThreads), 0,
         stream, args);
}

#endif  // ENGINE_CONV_ENTRY_POINTS_ELSEWHERE

}  // namespace engine::cuda
