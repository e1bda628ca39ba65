// The rows of bench_kernels: the bench cases of the op registry (bench/ops/op_description.h),
// each against a baseline timed in the same run, and the per-step totals of the ops that have
// one (the convolutions' three passes, weighted by each layer's count). CPU: PyTorch 1.13
// running the op's description's Python (tools/bench_torch_ops.py) on the same threads. GPU:
// the description's GPU baseline: cuDNN's convolutions and add+ReLU, cuBLAS for the fc layer's
// GEMMs, and for the other memory-bound ops a device copy moving the same bytes, so that ratio
// is the fraction of copy bandwidth reached. The sim device: our CPU backend on the same op
// (how much slower the emulated GPU is).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "bench/timing.h"
#include "kernels/dtype.h"
#include "kernels/stream.h"

namespace engine::bench {

struct OpRowOptions {
  std::string arch;  // resnet18 or resnet50
  int64_t batch = 0;
  int64_t image_size = 224;
  std::vector<DType> dtypes;  // --dtype's, for the ops whose rows are per dtype (BenchDtypes)
  std::string filter;         // only cases whose row subject contains it ("" = all)
  bool baseline = true;
  int threads = 0;  // PyTorch's intra-op threads (the CPU baseline)
  // Every row is timed this many times, each side keeping its fastest (fastest_of_rounds).
  int rounds = 1;
  // Called with the rows so far as each is measured in the first round: a run stopped at its
  // time limit (scripts/gpu-check) keeps what it measured.
  std::function<void(const std::vector<Row>&)> measured;
};

std::vector<Row> run_op_rows(const OpRowOptions& options, Stream& stream,
                             const TimingOptions& timing);

}  // namespace engine::bench
