// bench_kernels --tune: every candidate algorithm of every convolution pass of a ResNet timed
// by the tuner (nn/conv_tuner.h), each pass as a training step runs it (with BatchNorm's work
// fused in, --fusion), printed as a table of the heuristic's time, the fastest candidate's and
// the gain, layer by layer and summed over the network as training runs it; optionally written
// as a plan table (kernels/conv_plans.h), the file that is committed as a GPU's default
// (nn/conv_plans/<gpu>.tsv).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/resnet_layers.h"
#include "kernels/dtype.h"
#include "kernels/fp32_math.h"
#include "kernels/stream.h"
#include "nn/resnet.h"

namespace engine::bench {

struct ConvTuneTableOptions {
  std::vector<DType> dtypes;
  bool tf32 = false;  // f32 rows as tf32 (the stream's math) rather than exact fp32
  int samples = 5;
  std::string out;  // "": print only; else also write the plan table here
  // The passes a training step runs in a dtype, with their fusion and how many convolutions
  // run each (nn::ResNet::counted_conv_problems at the step's images); the layers select
  // among them by shape and name them.
  std::function<std::vector<nn::ResNet::CountedConvProblem>(DType)> step_problems;
};

// Prints the table on stdout (and writes the plan table to options.out).
void run_conv_tune_table(const std::vector<ConvLayer>& layers, Stream& stream,
                         const ConvTuneTableOptions& options);

}  // namespace engine::bench
