// Benchmark rows, printed as a readable table and, with --json, one JSON object per line
// (the fields of DESIGN.md's bench section). A row with a baseline carries its time and the
// ratio ours/baseline in "higher is better" form: baseline_time / our_time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace engine::bench {

struct Row {
  Row(std::string bench_name, std::string impl_name, std::string case_text, double time)
      : bench(std::move(bench_name)),
        impl(std::move(impl_name)),
        case_name(std::move(case_text)),
        time_us(time) {}

  std::string bench;  // "kernels"
  std::string impl;   // "native", "cudnn", "torch", ...
  std::string case_name;
  double time_us = 0;
  std::optional<double> gflops;
  std::optional<double> gbps;
  std::optional<double> images_per_s;
  std::optional<int64_t> bytes;
  std::optional<int64_t> kernel_launches;  // per step or call, on a CUDA device
  std::optional<int64_t> graph_nodes;      // the CUDA graph replayed per step, when one is
  std::string baseline;                    // name of the baseline impl, "" when none
  std::optional<double> baseline_time_us;
  std::string note;  // e.g. why a baseline is missing

  std::optional<double> ratio() const {
    if (!baseline_time_us || time_us <= 0) return std::nullopt;
    return *baseline_time_us / time_us;
  }
};

std::string to_json(const Row& row);
// A fixed-width table with the columns the rows use.
void print_table(const std::vector<Row>& rows);
// The same rows timed in several rounds (same cases in the same order): each row keeps its
// fastest time and its baseline's fastest time, so a slow spell of a shared machine that hits
// one side in one round does not decide a ratio.
std::vector<Row> fastest_of_rounds(const std::vector<std::vector<Row>>& rounds);

// Geometric mean of the ratios of rows that have one (nullopt when none do).
std::optional<double> geometric_mean_ratio(const std::vector<Row>& rows);

}  // namespace engine::bench
