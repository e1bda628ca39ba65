// A table of convolution algorithms, one per problem (kernels/conv_algo.h), and its text form:
// the tuner's cache file and the committed default tables (nn/conv_plan_file.h). A problem
// without a row runs the heuristic's algorithm.
//
// The text: '#' comments, then header rows "format 3", "gpu NAME", "cuda VERSIONS", "kernels
// HASH" naming what the timings are valid for, then one tab-separated row per problem:
//   pass dtype math fusion batch in_h in_w in_c out_c kernel_h kernel_w stride_h stride_w pad_h
//   pad_w dilation_h dilation_w tile split epilogue padding microseconds
// (formats 1 and 2, still read: without padding, the heuristic's; format 1 also without
// fusion, every row a plain pass).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "kernels/conv_algo.h"

namespace engine {

struct ConvPlanEntry {
  ConvAlgo algo;
  double microseconds = 0;  // the chosen algorithm's time (0 where it was not timed)
};

class ConvPlans {
 public:
  void set(const ConvProblem& problem, const ConvPlanEntry& entry) { entries_[problem] = entry; }
  // The row for `problem`, or null.
  const ConvPlanEntry* find(const ConvProblem& problem) const;
  // The row's algorithm, or the heuristic's ({}) when there is none.
  ConvAlgo algo_for(const ConvProblem& problem) const;
  size_t size() const { return entries_.size(); }
  const std::map<ConvProblem, ConvPlanEntry>& entries() const { return entries_; }

 private:
  std::map<ConvProblem, ConvPlanEntry> entries_;
};

// What a table's timings hold for: the GPU's name, the CUDA runtime and driver, and the
// engine's convolution kernels (a hash of their sources).
struct ConvPlanOrigin {
  std::string gpu;
  std::string cuda;
  std::string kernels;
  bool operator==(const ConvPlanOrigin&) const = default;
};

std::string conv_plans_text(const ConvPlans& plans, const ConvPlanOrigin& origin);

struct ParsedConvPlans {
  ConvPlanOrigin origin;
  ConvPlans plans;
};
// Throws engine::Error naming `source` and the line of the first malformed row.
ParsedConvPlans parse_conv_plans(std::string_view text, std::string_view source);

}  // namespace engine
