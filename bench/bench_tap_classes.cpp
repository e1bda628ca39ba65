// bench_tap_classes: the CPU convolutions of CPUs without AVX-512 (kernels/cpu/conv_sgemm.h)
// per tap class against over im2col's full rows, for every distinct convolution of a ResNet at
// each image size and batch asked for: forward, input gradient and filter gradient, fp32. The
// two ways alternate call by call in one process, so that the machine's slow spells (25% on the
// shared VMs here) fall on both alike; each keeps its fastest call. Prints each pass's times,
// the ratio (full rows / per class: above 1, the classes are faster), which way the estimate
// (tap_classes_pay) picks, and over all passes the time of the estimate's choices, of always
// one way and of always the faster way. The portable loops are forced, so an AVX-512 machine
// measures what a CPU without it runs (on its own cores).
//
//   bench_tap_classes [-a resnet18] [--image-size 32,64,160] [-b 64,32,8] [--reps 10]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "bench/resnet_layers.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_sgemm.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/tap_classes.h"
#include "train/cli_command.h"
#include "train/common_flags.h"

namespace engine::bench {
namespace {

struct Options {
  std::string arch = "resnet18";
  std::vector<int64_t> image_sizes = {32, 64, 160};
  std::vector<int64_t> batches = {64, 32, 8};
  int reps = 10;
  int threads = 2;
};

cli::Command make_command(Options& o) {
  cli::Command command(
      "bench_tap_classes", "[flags]",
      "Times the portable CPU convolution passes (no AVX-512: OpenBLAS) per tap class against "
      "over im2col's full rows, alternating call by call, for each distinct convolution of the "
      "ResNet at each (image size, batch) pair, and compares the estimate's choice of way with "
      "the faster way measured.");
  cli::add_arch(command, o.arch);
  command.integers("--image-size", o.image_sizes,
                   "input images' sides, paired with --batch-size in order");
  cli::add_batch_sizes(command, o.batches, "images per pass, one per --image-size");
  command.integer("--reps", o.reps, "calls of each way per pass (each keeps its fastest)");
  command.integer("--threads", o.threads, "OpenMP threads");
  return command;
}

void check(const Options& o) {
  if (o.reps < 1 || o.threads < 1) throw cli::UsageError("--reps and --threads must be >= 1");
  if (o.image_sizes.size() != o.batches.size()) {
    throw cli::UsageError("--image-size and --batch-size need as many values each (pairs)");
  }
  for (int64_t size : o.image_sizes) {
    if (size < 32) throw cli::UsageError("--image-size must be >= 32 (layer4's map is size/32)");
  }
}

enum Pass { kForward, kData, kFilter, kPasses };
const char* const kPassNames[kPasses] = {"fwd", "bwd_data", "bwd_filter"};

// The fastest of `reps` calls of each pass, per way: [pass][0 full rows, 1 per class].
struct PassTimes {
  double us[kPasses][2];
};

PassTimes time_layer(const Conv2dShape& shape, int reps) {
  std::vector<float> x(static_cast<size_t>(shape_numel(shape.input_shape())));
  std::vector<float> w(static_cast<size_t>(shape_numel(shape.filter_shape())));
  std::vector<float> dy(static_cast<size_t>(shape_numel(shape.output_shape())));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i % 7) * 0.125f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(i % 5) * 0.0625f;
  std::fill(dy.begin(), dy.end(), 0.25f);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
  PassTimes times;
  for (auto& pass : times.us)
    pass[0] = pass[1] = std::numeric_limits<double>::infinity();
  for (int rep = 0; rep < reps; ++rep) {
    for (int turn = 0; turn < 2; ++turn) {
      const int way = (rep + turn) % 2;  // which way goes first alternates too
      cpu::force_tap_classes(way == 1);
      for (int pass = 0; pass < kPasses; ++pass) {
        const auto start = std::chrono::steady_clock::now();
        if (pass == kForward)
          cpu::conv2d_forward({.shape = shape, .x = x.data(), .w = w.data(), .y = y.data()});
        if (pass == kData)
          cpu::conv2d_backward_data(
              {.shape = shape, .dy = dy.data(), .w = w.data(), .dx = dx.data()});
        if (pass == kFilter)
          cpu::conv2d_backward_filter(
              {.shape = shape, .x = x.data(), .dy = dy.data(), .dw = dw.data()});
        const double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                .count();
        times.us[pass][way] = std::min(times.us[pass][way], us);
      }
    }
  }
  cpu::force_tap_classes(std::nullopt);
  return times;
}

int run(const Options& o) {
  omp_set_num_threads(o.threads);
  cpu::force_portable_kernels(true);
  std::printf(
      "portable CPU convolutions (OpenBLAS), %d threads, fastest of %d calls each way; "
      "ratio = full rows / per class\n",
      o.threads, o.reps);
  std::printf("%-44s %-10s %10s %10s %7s %s\n", "layer", "pass", "full_us", "class_us", "ratio",
              "estimate");
  double chosen = 0, full = 0, classes = 0, fastest = 0;
  for (size_t pair = 0; pair < o.image_sizes.size(); ++pair) {
    const int64_t size = o.image_sizes[pair], batch = o.batches[pair];
    for (const ConvLayer& layer : resnet_conv_layers(o.arch, batch, size)) {
      const Conv2dShape& shape = layer.shape;
      // Without padding there is one class: the same product either way.
      if (shape.pad_h == 0 && shape.pad_w == 0) continue;
      const PassTimes times = time_layer(shape, o.reps);
      for (int pass = 0; pass < kPasses; ++pass) {
        // The input gradient of a stride-1 convolution is a forward convolution of the flipped
        // filters (kernels/cpu/conv.cpp): its estimate is that convolution's. A strided one
        // takes neither way (a product into columns that col2im sums).
        Conv2dShape estimated = shape;
        if (pass == kData) {
          if (shape.stride_h != 1 || shape.stride_w != 1) continue;
          estimated.in_channels = shape.out_channels;
          estimated.out_channels = shape.in_channels;
          estimated.pad_h = (shape.kernel_h - 1) * shape.dilation_h - shape.pad_h;
          estimated.pad_w = (shape.kernel_w - 1) * shape.dilation_w - shape.pad_w;
        }
        const bool pays = cpu::tap_classes_pay(estimated, cpu::TapClassPlan(estimated));
        const double full_us = times.us[pass][0], class_us = times.us[pass][1];
        const double weight = layer.count;
        full += weight * full_us;
        classes += weight * class_us;
        chosen += weight * (pays ? class_us : full_us);
        fastest += weight * std::min(full_us, class_us);
        const std::string name =
            std::to_string(size) + "px b" + std::to_string(batch) + " " + layer.name;
        std::printf("%-44s %-10s %10.0f %10.0f %7.3f %s\n", name.c_str(), kPassNames[pass], full_us,
                    class_us, full_us / class_us, pays ? "per class" : "full rows");
      }
    }
  }
  std::printf(
      "\ntotal, each layer weighed by its count, against always the faster way: "
      "the estimate's choices %.3f, always full rows %.3f, always per class %.3f\n",
      chosen / fastest, full / fastest, classes / fastest);
  return 0;
}

}  // namespace
}  // namespace engine::bench

int main(int argc, char** argv) {
  using namespace engine::bench;
  return engine::cli::run_program<Options>(argc, argv, make_command, check, run);
}
