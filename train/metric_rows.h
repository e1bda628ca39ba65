// Per-batch figures held on the batch's device until they are needed, so that a training
// step ends without the host waiting for it: each batch's mean loss and its top-1 and top-5
// counts go into one row of a small buffer on the device (a queued copy and a queued kernel),
// and drain() brings every row to the host at once, with the one synchronization they need.
// The trainer drains every --print-freq steps, where the figures are printed and summed over
// ranks (like a PyTorch script that calls loss.item() only where it prints).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/device.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"

namespace engine::train {

struct MetricRow {
  float mean_loss = 0, correct1 = 0, correct5 = 0;
};

class MetricRows {
 public:
  MetricRows(int64_t capacity, Device device);

  // Queues the batch's row: mean_loss (f32, one element, on the rows' device) and the top-1/5
  // counts of logits against labels. Needs room (!full()).
  void push(const Tensor& logits, const Tensor& labels, const Tensor& mean_loss, Stream& stream);
  // Every queued row, in push order; waits for `stream` and empties the queue.
  std::vector<MetricRow> drain(Stream& stream);

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ == capacity_; }

 private:
  int64_t capacity_;
  int64_t size_ = 0;
  Tensor rows_;  // f32[capacity, 3]: mean loss, top-1, top-5
};

}  // namespace engine::train
