// Runs tools/bench_torch_kernels.py (Debian's python3 with python3-torch) beside the
// benchmark, on the same machine and thread count, and returns its times per (case, pass).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/resnet_layers.h"

namespace engine::bench {

struct TorchBaseline {
  std::map<std::pair<std::string, std::string>, double> time_us;  // (case, pass) -> us
  std::string unavailable_reason;                                 // "" when it ran
};

// Runs tools/<script> with `cases` (tab-separated lines) on stdin; the script prints
// "case<TAB>pass<TAB>time_us" lines.
TorchBaseline run_torch_baseline(const std::string& script, const std::vector<std::string>& cases,
                                 int threads, double min_seconds);

// tools/bench_torch_kernels.py over the layers' fwd / bwd_data / bwd_filter passes.
TorchBaseline run_torch_conv_baseline(const std::vector<ConvLayer>& layers, int threads,
                                      double min_seconds);

}  // namespace engine::bench
