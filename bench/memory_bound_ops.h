// Rows for the memory-bound ops of a ResNet (BatchNorm training forward and backward, ReLU,
// the stem's max-pool) on the activation shapes of ResNet-18, with the bytes each moves at
// the least. CPU baseline: PyTorch (tools/bench_torch_ops.py) in the same run; GPU baseline:
// a device memcpy moving the same bytes, so the ratio is the fraction of copy bandwidth.
#pragma once

#include <vector>

#include "bench/bench_report.h"
#include "bench/timing.h"
#include "kernels/stream.h"

namespace engine::bench {

std::vector<Row> run_memory_bound_ops(int64_t batch, Stream& stream, const TimingOptions& timing,
                                      bool with_baseline, int threads);

}  // namespace engine::bench
