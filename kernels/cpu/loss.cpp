#include "kernels/cpu/loss.h"

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace engine::cpu {
namespace {

// The class index a label holds, or -1 when it is not in [0, k).
int64_t class_index(int32_t label, int64_t k) {
  return label >= 0 && label < k ? label : -1;
}

// Row statistics of the softmax: max and sum of exp(z - max).
template <typename T>
void softmax_stats(const T* row, int64_t k, float& max, float& sum) {
  max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < k; ++j)
    max = std::fmax(max, to_float(row[j]));
  sum = 0.f;
  for (int64_t j = 0; j < k; ++j)
    sum += std::exp(to_float(row[j]) - max);
  // NaN anywhere in the row makes the sum NaN (fmax skips it for the max).
}

// Rows of logits are spread over threads from this many elements on: each costs an exp, ten
// times a copy, so far fewer than parallel_for's threshold pay for waking the threads.
constexpr int64_t kExpParallelThreshold = int64_t{1} << 12;

// Calls body(row) for every row, in parallel when there are enough exps to share.
template <typename Body>
void for_each_row(int64_t rows, int64_t k, Body&& body) {
  [[maybe_unused]] const bool parallel = rows > 1 && rows * k >= kExpParallelThreshold;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < rows; ++i)
    body(i);
}

// Calls body(row, e) for every row, in parallel as for_each_row, with e a buffer of k floats
// of the calling thread's own.
template <typename Body>
void for_each_row_with_buffer(int64_t rows, int64_t k, Body&& body) {
  [[maybe_unused]] const bool parallel = rows > 1 && rows * k >= kExpParallelThreshold;
#pragma omp parallel if (parallel)
  {
    std::vector<float> e(static_cast<size_t>(k));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i)
      body(i, e.data());
  }
}

// e[j] = exp(z_j - max) of a row, kept so that each is computed once (std::exp dominates the
// backward passes); returns their sum. The row is read whole before a caller writes its
// gradient, so dlogits may alias logits.
template <typename T>
float row_exps(const T* row, int64_t k, float* e) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < k; ++j)
    max = std::fmax(max, to_float(row[j]));
  float sum = 0.f;
  for (int64_t j = 0; j < k; ++j) {
    e[j] = std::exp(to_float(row[j]) - max);
    sum += e[j];
  }
  return sum;
}

// loss[0] = the mean of the per-sample losses, summed in double.
void store_mean(const float* sample_loss, int64_t n, float* loss) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i)
    total += sample_loss[i];
  loss[0] = static_cast<float>(total / static_cast<double>(n));
}

}  // namespace

void cross_entropy_forward(const CrossEntropyForwardArgs& args) {
  const int32_t* labels = args.labels;
  const int64_t n = args.n, k = args.k;
  const float label_smoothing = args.label_smoothing;
  float* sample_loss = args.sample_loss;
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* z = static_cast<const T*>(args.logits);
    for_each_row(n, k, [&](int64_t i) {
      const T* row = z + i * k;
      const int64_t label = class_index(labels[i], k);
      if (label < 0) {
        sample_loss[i] = std::numeric_limits<float>::quiet_NaN();
        return;
      }
      float max = 0.f, sum = 0.f, sum_z = 0.f;
      softmax_stats(row, k, max, sum);
      for (int64_t j = 0; j < k; ++j)
        sum_z += to_float(row[j]);
      // -sum_j q_j (z_j - lse) = lse - sum_j q_j z_j, since the q_j sum to 1.
      const float lse = max + std::log(sum);
      sample_loss[i] = lse - (1.f - label_smoothing) * to_float(row[label]) -
                       label_smoothing / static_cast<float>(k) * sum_z;
    });
  });
  store_mean(sample_loss, n, args.loss);
}

void cross_entropy_backward(const CrossEntropyBackwardArgs& args) {
  const int32_t* labels = args.labels;
  const int64_t n = args.n, k = args.k;
  const float label_smoothing = args.label_smoothing;
  const float scale = args.grad_loss / static_cast<float>(n);
  const float smooth = label_smoothing / static_cast<float>(k);
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* z = static_cast<const T*>(args.logits);
    T* dz = static_cast<T*>(args.dlogits);
    for_each_row_with_buffer(n, k, [&](int64_t i, float* e) {
      const int64_t label = class_index(labels[i], k);
      float sum = row_exps(z + i * k, k, e);
      if (label < 0) sum = std::numeric_limits<float>::quiet_NaN();
      T* grad = dz + i * k;
      for (int64_t j = 0; j < k; ++j) {
        const float target = smooth + (j == label ? 1.f - label_smoothing : 0.f);
        grad[j] = from_float<T>((e[j] / sum - target) * scale);
      }
    });
  });
}

void soft_cross_entropy_forward(const SoftCrossEntropyForwardArgs& args) {
  const int64_t n = args.n, k = args.k;
  float* sample_loss = args.sample_loss;
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* z = static_cast<const T*>(args.logits);
    for_each_row(n, k, [&](int64_t i) {
      const T* row = z + i * k;
      const float* target = args.targets + i * k;
      float max = 0.f, sum = 0.f, mass = 0.f, target_z = 0.f;
      softmax_stats(row, k, max, sum);
      for (int64_t j = 0; j < k; ++j) {
        mass += target[j];
        target_z += target[j] * (to_float(row[j]) - max);
      }
      // -sum_j t_j (z_j - lse) = log(sum) * sum_j t_j - sum_j t_j (z_j - max), with lse = max +
      // log(sum): shifted by the max, so large logits do not cancel.
      sample_loss[i] = std::log(sum) * mass - target_z;
    });
  });
  store_mean(sample_loss, n, args.loss);
}

void soft_cross_entropy_backward(const SoftCrossEntropyBackwardArgs& args) {
  const int64_t n = args.n, k = args.k;
  const float scale = args.grad_loss / static_cast<float>(n);
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* z = static_cast<const T*>(args.logits);
    T* dz = static_cast<T*>(args.dlogits);
    for_each_row_with_buffer(n, k, [&](int64_t i, float* e) {
      const float* target = args.targets + i * k;
      const float sum = row_exps(z + i * k, k, e);
      float mass = 0.f;
      for (int64_t j = 0; j < k; ++j)
        mass += target[j];
      const float weight = mass / sum;
      T* grad = dz + i * k;
      for (int64_t j = 0; j < k; ++j)
        grad[j] = from_float<T>((e[j] * weight - target[j]) * scale);
    });
  });
}

void topk_correct(const TopkCorrectArgs& args) {
  const int32_t* labels = args.labels;
  const int64_t n = args.n, k = args.k;
  int64_t top1 = 0, top5 = 0;
  dispatch_dtype(args.dtype, [&]<typename T>() {
    const T* z = static_cast<const T*>(args.logits);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t label = class_index(labels[i], k);
      if (label < 0) continue;
      const T* row = z + i * k;
      const float target = to_float(row[label]);
      // The label's rank: classes ahead of it (greater, or equal with a lower index).
      int64_t ahead = 0;
      for (int64_t j = 0; j < k; ++j) {
        const float v = to_float(row[j]);
        ahead += (v > target || (v == target && j < label)) ? 1 : 0;
      }
      top1 += ahead < 1 ? 1 : 0;
      top5 += ahead < 5 ? 1 : 0;
    }
  });
  args.correct[0] = static_cast<float>(top1);
  args.correct[1] = static_cast<float>(top5);
}

}  // namespace engine::cpu
