// What cmake/ConvPlanBuild.cmake writes into the build (conv_plan_build.cpp): the hash of the
// CUDA kernels' sources and the committed default tables of nn/conv_plans/, for
// nn/conv_plan_file.cpp alone.
#pragma once

#include <cstddef>

namespace engine::nn::build {

struct EmbeddedTable {
  const char* file_name;
  const char* text;
};

extern const char* const kKernelSetHash;
extern const EmbeddedTable kDefaultTables[];
extern const size_t kDefaultTableCount;

}  // namespace engine::nn::build
