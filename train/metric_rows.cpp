#include "train/metric_rows.h"

#include <string>

#include "kernels/error.h"
#include "kernels/ops.h"

namespace engine::train {

namespace {
constexpr int64_t kColumns = 3;
}  // namespace

MetricRows::MetricRows(int64_t capacity, Device device)
    : capacity_(capacity), rows_(Tensor::empty({capacity, kColumns}, DType::f32, device)) {
  if (capacity < 1) fail("MetricRows: a capacity of " + std::to_string(capacity) + " rows");
}

void MetricRows::push(const Tensor& logits, const Tensor& labels, const Tensor& mean_loss,
                      Stream& stream) {
  if (full()) fail("MetricRows::push: all " + std::to_string(capacity_) + " rows are queued");
  Tensor loss = rows_.view(size_ * kColumns, {1});
  Tensor counts = rows_.view(size_ * kColumns + 1, {2});
  copy(mean_loss, loss, stream);
  topk_correct({.logits = logits, .labels = labels, .correct = counts}, stream);
  ++size_;
}

std::vector<MetricRow> MetricRows::drain(Stream& stream) {
  std::vector<MetricRow> rows(static_cast<size_t>(size_));
  if (size_ == 0) return rows;
  const std::vector<float> values = rows_.view(0, {size_ * kColumns}).to_floats(stream);
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i] = {values[i * kColumns], values[i * kColumns + 1], values[i * kColumns + 2]};
  size_ = 0;
  return rows;
}

}  // namespace engine::train
