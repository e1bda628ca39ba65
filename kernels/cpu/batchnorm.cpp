#include "kernels/cpu/batchnorm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/batchnorm_sums.h"
#include "kernels/conv_input_value.h"
#include "kernels/cpu/batchnorm_avx512.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vector_loops.h"

namespace engine::cpu {
namespace {

// Rows per partial statistic. Fixed (not per thread) so that results do not depend on the
// number of OpenMP threads.
constexpr int64_t kChunkRows = 256;

int64_t chunk_count(int64_t rows) {
  return std::max<int64_t>(1, (rows + kChunkRows - 1) / kChunkRows);
}

bool worth_threads(int64_t rows, int64_t channels) {
  return rows * channels >= kParallelThreshold;
}

// The reduce passes (the statistics, backward's sums) and the element-wise passes after them
// split the rows alike: each thread takes the same contiguous run of chunks in both. A reduce
// pass walks its run forward; an element-wise pass walks it backward, in blocks of 64 rows, so
// each thread starts on the rows it read last, which are still in its L2 when its run of x
// and dy outgrows it (a ResNet stem's activations at batch 32 and up).

// Calls body(chunk, first_row, end_row) for every chunk of kChunkRows rows, in parallel.
template <typename Body>
void for_each_chunk(int64_t rows, int64_t channels, Body&& body) {
  for_each_thread_share(chunk_count(rows), worth_threads(rows, channels),
                        [&](int64_t first_chunk, int64_t end_chunk) {
                          for (int64_t k = first_chunk; k < end_chunk; ++k)
                            body(k, k * kChunkRows, std::min(rows, (k + 1) * kChunkRows));
                        });
}

// Calls body(first_row, end_row) for blocks of rows covering every row, each thread walking
// its run of chunks backward (see above).
template <typename Body>
void for_each_row_block_reversed(int64_t rows, int64_t channels, Body&& body) {
  constexpr int64_t kBlockRows = 64;
  for_each_thread_share(chunk_count(rows), worth_threads(rows, channels),
                        [&](int64_t first_chunk, int64_t end_chunk) {
                          const int64_t begin = first_chunk * kChunkRows;
                          const int64_t end = std::min(rows, end_chunk * kChunkRows);
                          const int64_t blocks = (end - begin + kBlockRows - 1) / kBlockRows;
                          for (int64_t b = blocks - 1; b >= 0; --b)
                            body(begin + b * kBlockRows,
                                 std::min(end, begin + (b + 1) * kBlockRows));
                        });
}

// Chan et al.: merges the (count, mean, m2) of a second set into the first.
void chan_merge(double& count, double& mean, double& m2, double count_b, double mean_b,
                double m2_b) {
  if (count_b == 0) return;
  const double total = count + count_b;
  const double delta = mean_b - mean;
  mean += delta * (count_b / total);
  m2 += m2_b + delta * delta * (count * count_b / total);
  count = total;
}

// The affine map per channel: y = (x - mean) * scale + shift. Subtracting the mean first
// keeps full precision when |mean| >> std (x * scale - mean * scale would cancel). Separate
// arrays rather than a struct per channel, so the loop over channels vectorizes.
struct ChannelAffine {
  explicit ChannelAffine(int64_t channels) : mean(channels), scale(channels), shift(channels) {}
  std::vector<float> mean, scale, shift;
};

// The vector width of the portable loops: AVX2 where the CPU has it (kernels/cpu/
// vector_loops.h), for CPUs without AVX-512 and channel counts the AVX-512 loops do not take.
// The baseline loops ran layer1-2's backward at 0.63-0.71x of PyTorch on the AVX2-only EPYC
// (bench/results/kernels-cpu-resnet18-amd-epyc-avx2.txt).
VectorIsa portable_loops_level() {
  return std::min(vector_isa(), VectorIsa::kAvx2);
}

template <typename T>
void apply_affine(const T* x, const ChannelAffine& affine, const T* residual, bool relu, T* y,
                  int64_t rows, int64_t channels) {
  if (batchnorm_avx512_applies(channels)) {
    for_each_row_block_reversed(rows, channels, [&](int64_t begin, int64_t end) {
      batchnorm_affine_avx512(x, affine.mean.data(), affine.scale.data(), affine.shift.data(),
                              residual, relu, y, begin, end, channels);
    });
    return;
  }
  const VectorIsa level = portable_loops_level();
  for_each_row_block_reversed(rows, channels, [&](int64_t begin, int64_t end) {
    run_loops_at(level, [&] {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t row = r * channels;
        for (int64_t c = 0; c < channels; ++c) {
          float v = (to_float(x[row + c]) - affine.mean[c]) * affine.scale[c] + affine.shift[c];
          if (residual) v += to_float(residual[row + c]);
          if (relu) v = v < 0.f ? 0.f : v;
          y[row + c] = from_float<T>(v);
        }
      }
    });
  });
}

// dy at element i, through a fused ReLU whose output is relu_output (or none, null): passed
// where the output is > 0, else 0, as relu_backward. A select of floats, so loops vectorize.
template <typename T>
float gradient_through_relu(const T* dy, const T* relu_output, int64_t i) {
  const float g = to_float(dy[i]);
  if (relu_output == nullptr) return g;
  return to_float(relu_output[i]) > 0.f ? g : 0.f;
}

// g where the fused ReLU's output, recomputed from x's value v with its channel's scale and
// shift as the next convolution read it (conv_input_value: the same bits), is > 0, else 0.
float gate_by_recomputed_relu(float g, float v, float scale, float shift) {
  return conv_input_value(v, scale, shift, true) > 0.f ? g : 0.f;
}

// Calls body(std::true_type) when the ReLU's mask is recomputed from x, else
// body(std::false_type): the loops without it compile as they did, vectorized (GCC vectorizes
// none of a loop's versions that holds a branch to the fused multiply-add).
template <typename Body>
void with_recomputed_mask(const float* relu_scale, Body&& body) {
  if (relu_scale) {
    body(std::true_type{});
  } else {
    body(std::false_type{});
  }
}

float weight_at(const float* weight, int64_t c) {
  return weight ? weight[c] : 1.f;
}
float bias_at(const float* bias, int64_t c) {
  return bias ? bias[c] : 0.f;
}

}  // namespace

void batchnorm_stats(const BatchNormStatsArgs& args) {
  const int64_t rows = args.rows, channels = args.channels;
  float* stats = args.stats;
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* in = static_cast<const T*>(args.x);
    const int64_t chunks = chunk_count(rows);
    const bool avx512 = batchnorm_avx512_applies(channels);
    const VectorIsa level = portable_loops_level();
    // Per chunk and channel: mean and m2, from sums of x - (the chunk's first row), which is
    // within a few standard deviations of the mean, so s2 - s1^2/n does not cancel.
    std::vector<double> chunk_mean(chunks * channels), chunk_m2(chunks * channels);
    for_each_chunk(rows, channels, [&](int64_t k, int64_t begin, int64_t end) {
      std::vector<float> shift(channels);
      std::vector<double> s1(channels, 0.0), s2(channels, 0.0);
      for (int64_t c = 0; c < channels; ++c)
        shift[c] = to_float(in[begin * channels + c]);
      if (avx512) {
        batchnorm_shifted_sums_avx512(in, begin, end, channels, shift.data(), s1.data(), s2.data());
      } else {
        run_loops_at(level, [&] {
          for (int64_t r = begin; r < end; ++r) {
            for (int64_t c = 0; c < channels; ++c) {
              const double d = static_cast<double>(to_float(in[r * channels + c])) - shift[c];
              s1[c] += d;
              s2[c] += d * d;
            }
          }
        });
      }
      const double n = static_cast<double>(end - begin);
      for (int64_t c = 0; c < channels; ++c) {
        chunk_mean[k * channels + c] = shift[c] + s1[c] / n;
        chunk_m2[k * channels + c] = std::max(0.0, s2[c] - s1[c] * s1[c] / n);
      }
    });
    for (int64_t c = 0; c < channels; ++c) {
      double count = 0, mean = 0, m2 = 0;
      for (int64_t k = 0; k < chunks; ++k) {
        const double n = static_cast<double>(std::min(rows, (k + 1) * kChunkRows) - k * kChunkRows);
        chan_merge(count, mean, m2, n, chunk_mean[k * channels + c], chunk_m2[k * channels + c]);
      }
      stats[c] = static_cast<float>(mean);
      stats[channels + c] = static_cast<float>(m2);
    }
    stats[2 * channels] = static_cast<float>(rows);
  });
  // The phases the CUDA merge does in the same launch, from the same fp32 statistics.
  if (args.sums == nullptr) return;
  batchnorm_stats_to_sums({.stats = stats, .channels = channels, .sums = args.sums});
  if (args.finalize.batch_stats == nullptr) return;
  BatchNormFinalizeSumsArgs finalize = args.finalize;
  finalize.sums = args.sums;
  finalize.channels = channels;
  batchnorm_finalize_sums(finalize);
}

void batchnorm_stats_to_sums(const BatchNormStatsToSumsArgs& args) {
  const float* stats = args.stats;
  const int64_t channels = args.channels;
  double* sums = args.sums;
  const float count = stats[2 * channels];
  for (int64_t c = 0; c < channels; ++c) {
    const ChannelSums channel = batchnorm_channel_sums(count, stats[c], stats[channels + c]);
    sums[c] = channel.sum;
    sums[channels + c] = channel.sumsq;
  }
  sums[2 * channels] = static_cast<double>(count);
}

void batchnorm_finalize_sums(const BatchNormFinalizeSumsArgs& args) {
  const double* sums = args.sums;
  const int64_t channels = args.channels;
  const double count = sums[2 * channels];
  for (int64_t c = 0; c < channels; ++c)
    batchnorm_finalize_channel(args, c, sums[c], sums[channels + c], count);
}

void batchnorm_normalize(const BatchNormNormalizeArgs& args) {
  const int64_t channels = args.channels;
  ChannelAffine affine(channels);
  for (int64_t c = 0; c < channels; ++c) {
    affine.mean[c] = args.batch_stats[c];
    affine.scale[c] = args.batch_stats[channels + c] * weight_at(args.weight, c);
    affine.shift[c] = bias_at(args.bias, c);
  }
  dispatch_dtype(args.dtype, [&]<typename T>() {
    apply_affine(static_cast<const T*>(args.x), affine, static_cast<const T*>(args.residual),
                 args.relu, static_cast<T*>(args.y), args.rows, channels);
  });
}

void batchnorm_eval_forward(const BatchNormEvalForwardArgs& args) {
  const int64_t channels = args.channels;
  ChannelAffine affine(channels);
  for (int64_t c = 0; c < channels; ++c) {
    affine.mean[c] = args.running_mean[c];
    affine.scale[c] = weight_at(args.weight, c) / std::sqrt(args.running_var[c] + args.eps);
    affine.shift[c] = bias_at(args.bias, c);
  }
  dispatch_dtype(args.dtype, [&]<typename T>() {
    apply_affine(static_cast<const T*>(args.x), affine, static_cast<const T*>(args.residual),
                 args.relu, static_cast<T*>(args.y), args.rows, channels);
  });
}

void batchnorm_backward_reduce(const BatchNormBackwardReduceArgs& args) {
  const int64_t rows = args.rows, channels = args.channels;
  const float* batch_stats = args.batch_stats;
  float* grad_sums = args.grad_sums;
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* grad = static_cast<const T*>(args.dy);
    const T* relu_output = static_cast<const T*>(args.relu_output);
    T* relu_grad = static_cast<T*>(args.relu_grad);
    const T* in = static_cast<const T*>(args.x);
    const int64_t chunks = chunk_count(rows);
    const bool avx512 = batchnorm_avx512_applies(channels);
    const VectorIsa level = portable_loops_level();
    std::vector<double> sum_dy(chunks * channels), sum_dy_xmu(chunks * channels);
    with_recomputed_mask(args.relu_scale, [&](auto recomputed) {
      for_each_chunk(rows, channels, [&](int64_t k, int64_t begin, int64_t end) {
        double* s_dy = sum_dy.data() + k * channels;
        double* s_dy_xmu = sum_dy_xmu.data() + k * channels;
        std::fill(s_dy, s_dy + channels, 0.0);
        std::fill(s_dy_xmu, s_dy_xmu + channels, 0.0);
        if (avx512) {
          batchnorm_backward_sums_avx512(grad, {relu_output, args.relu_scale, args.relu_shift},
                                         relu_grad, in, batch_stats, begin, end, channels, s_dy,
                                         s_dy_xmu);
          return;
        }
        // fp32 sums over blocks of 64 rows (vectorized), folded into the chunk's fp64 sums.
        constexpr int64_t kBlockRows = 64;
        std::vector<float> block_dy(channels), block_dy_xmu(channels);
        run_loops_at(level, [&] {
          for (int64_t block = begin; block < end; block += kBlockRows) {
            std::fill(block_dy.begin(), block_dy.end(), 0.f);
            std::fill(block_dy_xmu.begin(), block_dy_xmu.end(), 0.f);
            for (int64_t r = block; r < std::min(end, block + kBlockRows); ++r) {
              for (int64_t c = 0; c < channels; ++c) {
                const float v = to_float(in[r * channels + c]);
                float g = gradient_through_relu(grad, relu_output, r * channels + c);
                if constexpr (recomputed) {
                  g = gate_by_recomputed_relu(g, v, args.relu_scale[c], args.relu_shift[c]);
                }
                if (relu_grad) relu_grad[r * channels + c] = from_float<T>(g);
                block_dy[c] += g;
                block_dy_xmu[c] += g * (v - batch_stats[c]);
              }
            }
            for (int64_t c = 0; c < channels; ++c) {
              s_dy[c] += block_dy[c];
              s_dy_xmu[c] += block_dy_xmu[c];
            }
          }
        });
      });
    });
    for (int64_t c = 0; c < channels; ++c) {
      double total_dy = 0, total_dy_xmu = 0;
      for (int64_t k = 0; k < chunks; ++k) {
        total_dy += sum_dy[k * channels + c];
        total_dy_xmu += sum_dy_xmu[k * channels + c];
      }
      const float sum_dy = static_cast<float>(total_dy);
      const float sum_dy_xhat = static_cast<float>(total_dy_xmu * batch_stats[channels + c]);
      grad_sums[c] = sum_dy;
      grad_sums[channels + c] = sum_dy_xhat;
      batchnorm_write_grad(args.bias_grad, c, sum_dy, args.accumulate);
      batchnorm_write_grad(args.weight_grad, c, sum_dy_xhat, args.accumulate);
    }
  });
}

void batchnorm_backward_elementwise(const BatchNormBackwardElementwiseArgs& args) {
  const int64_t rows = args.rows, channels = args.channels;
  const float* batch_stats = args.batch_stats;
  const float* grad_sums = args.grad_sums;
  // Per-channel coefficients as separate arrays, so the inner loop over channels vectorizes.
  const float count = batch_stats[2 * channels];
  std::vector<float> mean(channels), invstd(channels), scale(channels), mean_dy(channels),
      mean_dy_xhat(channels);
  for (int64_t c = 0; c < channels; ++c) {
    mean[c] = batch_stats[c];
    invstd[c] = batch_stats[channels + c];
    scale[c] = invstd[c] * weight_at(args.weight, c);
    mean_dy[c] = grad_sums[c] / count;
    mean_dy_xhat[c] = grad_sums[channels + c] / count;
  }
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* grad = static_cast<const T*>(args.dy);
    const T* relu_output = static_cast<const T*>(args.relu_output);
    const T* in = static_cast<const T*>(args.x);
    T* out = static_cast<T*>(args.dx);
    if (batchnorm_avx512_applies(channels)) {
      for_each_row_block_reversed(rows, channels, [&](int64_t begin, int64_t end) {
        batchnorm_backward_rows_avx512(grad, {relu_output, args.relu_scale, args.relu_shift}, in,
                                       mean.data(), invstd.data(), scale.data(), mean_dy.data(),
                                       mean_dy_xhat.data(), out, begin, end, channels);
      });
      return;
    }
    const VectorIsa level = portable_loops_level();
    with_recomputed_mask(args.relu_scale, [&](auto recomputed) {
      for_each_row_block_reversed(rows, channels, [&](int64_t begin, int64_t end) {
        run_loops_at(level, [&] {
          for (int64_t r = begin; r < end; ++r) {
            const int64_t row = r * channels;
            for (int64_t c = 0; c < channels; ++c) {
              const float v = to_float(in[row + c]);
              const float xhat = (v - mean[c]) * invstd[c];
              float g = gradient_through_relu(grad, relu_output, row + c);
              if constexpr (recomputed) {
                g = gate_by_recomputed_relu(g, v, args.relu_scale[c], args.relu_shift[c]);
              }
              out[row + c] = from_float<T>(scale[c] * (g - mean_dy[c] - xhat * mean_dy_xhat[c]));
            }
          }
        });
      });
    });
  });
}

}  // namespace engine::cpu
