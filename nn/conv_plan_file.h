// Where the convolution tuner's choices live between runs (issue 40): a cache file per GPU
// kind, valid for one GPU name, CUDA runtime and driver, and build of the CUDA kernels (a
// hash of their sources); and a committed default table per GPU (nn/conv_plans/*.tsv,
// embedded in the binary), so that a machine that has never tuned starts from measured
// choices. A cache that does not match, or that does not parse, is ignored with one warning
// and tuned again; a default table counts for its GPU whatever built it (its rows are choices
// among kernels that all compute the same result, not results).
#pragma once

#include <string>

#include "kernels/conv_plans.h"

namespace engine::nn {

// The identity of CUDA device `index` and of this build's kernels.
ConvPlanOrigin conv_plan_origin(int cuda_device_index);

// $RESNET_ENGINE_CACHE, else $XDG_CACHE_HOME/resnet-engine, else ~/.cache/resnet-engine; then
// "conv-plans-<gpu name, lowercased, non-alphanumerics as '-'>.tsv".
std::string default_conv_plan_path(const ConvPlanOrigin& origin);

// The rows of the cache at `path` when it exists and was written for `expected`. Otherwise
// none, and `warning` (when not null) says why unless the file is simply missing.
ConvPlans read_conv_plan_file(const std::string& path, const ConvPlanOrigin& expected,
                              std::string* warning);

// Writes the table atomically (a temporary file in the same folder, then a rename), making
// the folder if needed. Throws engine::Error naming the path when it cannot.
void write_conv_plan_file(const std::string& path, const ConvPlans& plans,
                          const ConvPlanOrigin& origin);

// The committed default table for origin.gpu (its rows; none for another GPU).
ConvPlans default_conv_plans(const ConvPlanOrigin& origin);

}  // namespace engine::nn
