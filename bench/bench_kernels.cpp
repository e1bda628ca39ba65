// bench_kernels: every op of a ResNet training step against a baseline timed in the same
// run: the bench rows of the op registry (bench/op_rows.h): our conv2d passes per layer shape
// and their total over a step, BatchNorm, ReLU, add+ReLU, pooling, the fc layer,
// cross-entropy, top-k, SGD, each against PyTorch 1.13 on the CPU (its description's Python,
// tools/bench_torch_ops.py) and cuDNN, cuBLAS or a device copy on a GPU; plus element-wise
// bandwidth against device memcpy on a GPU. On the sim device (ENGINE_CUDA=SIM) the baseline of
// every row is the CPU backend on the same op: the emulator's speed relative to the CPU it runs
// on. --filter TEXT keeps the conv layers and op cases whose name contains TEXT (e.g. "layer3",
// "fc", "sgd").
//
//   bench_kernels [--device cpu|cuda] [-a resnet18|resnet50] [-b N] [--image-size N]
//                 [--dtype f32|bf16] [--min-seconds S] [--rounds N] [--filter TEXT]
//                 [--no-baseline] [--json]
//
// On the CPU, --rounds (default 2) repeats the whole comparison, ours and PyTorch's, and keeps
// each side's fastest time per case: a shared machine's slow spells last tens of seconds and
// otherwise decide a ratio by which side they happen to hit.
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_report.h"
#include "bench/conv_tune_table.h"
#include "bench/op_rows.h"
#include "bench/resnet_layers.h"
#include "bench/timing.h"
#include "kernels/cpu/isa.h"
#include "kernels/ops.h"
#include "kernels/runtime.h"
#include "train/common_flags.h"
#if ENGINE_BENCH_GPU_BASELINES
#include "bench/gpu_baselines.h"
#endif

namespace engine::bench {
namespace {

struct Options {
  std::string device = "auto";
  std::string arch;   // default: resnet18 on the CPU, resnet50 on a GPU
  int64_t batch = 0;  // default: 8 on the CPU, 128 on a GPU
  int64_t image_size = 224;
  std::string dtype = "both";
  double min_seconds = 0.3;
  int rounds = 0;  // CPU only; default 2
  std::string filter;
  bool baseline = true;
  bool json = false;
  bool tune = false;     // --tune: the tuner's table instead of the rows
  bool tf32 = false;     // --tune: f32 rows on TF32 tensor cores
  std::string tune_out;  // --tune-out FILE
  nn::BatchNormFusion fusion = nn::BatchNormFusion::full;  // --tune: the passes as fused
};

cli::Command make_command(Options& o) {
  cli::Command command(
      "bench_kernels", "[flags]",
      "Times every op of a ResNet training step against PyTorch (CPU) or cuDNN/cuBLAS (GPU) in "
      "the same run.");
  cli::add_device(command, o.device);
  cli::add_arch(command, o.arch, "resnet18 on the CPU, resnet50 on a GPU");
  cli::add_batch_size(command, o.batch, "images per step", 1, "", "8 on the CPU, 128 on a GPU");
  cli::add_image_size(command, o.image_size, "input images' side");
  command.option("--dtype", "T", "f32|bf16|both", o.dtype,
                 [&o](const std::string&, const std::string& text) {
                   if (text != "both") (void)parse_dtype(text);
                   o.dtype = text;
                 });
  command.number("--min-seconds", o.min_seconds, "timed per case and side");
  command.integer("--rounds", o.rounds,
                  "CPU: repeat the comparison and keep each side's fastest time", "2");
  command.text("--filter", o.filter, "TEXT",
               "keep the cases whose name contains TEXT (e.g. layer3, fc, sgd)");
  command.flag(
      "--no-baseline", [&o] { o.baseline = false; }, "time ours only");
  cli::add_json(command, o.json);
  command.flag(
      "--tune", [&o] { o.tune = true; },
      "GPU: time every candidate algorithm of each convolution pass (the tuner's) and print the "
      "heuristic's time, the fastest's and the gain");
  command.flag(
      "--tf32", [&o] { o.tf32 = true; }, "--tune: f32 passes on TF32 tensor cores");
  command.text("--tune-out", o.tune_out, "FILE",
               "--tune: also write the fastest per pass as a plan table (nn/conv_plans/)", "none");
  cli::add_fusion(command, o.fusion);
  return command;
}

std::vector<ConvLayer> selected_layers(const Options& options, const std::string& arch,
                                       int64_t batch) {
  std::vector<ConvLayer> layers;
  for (ConvLayer& layer : resnet_conv_layers(arch, batch, options.image_size)) {
    layer.name = arch + " " + layer.name;
    if (options.filter.empty() || layer.name.find(options.filter) != std::string::npos)
      layers.push_back(layer);
  }
  return layers;
}

// The dtypes --dtype asks for, in table order.
std::vector<DType> selected_dtypes(const Options& options) {
  std::vector<DType> dtypes;
  for (DType dtype : {DType::f32, DType::bf16}) {
    if (options.dtype == "both" || parse_dtype(options.dtype) == dtype) dtypes.push_back(dtype);
  }
  return dtypes;
}

OpRowOptions op_row_options(const Options& options, const std::string& arch, int64_t batch) {
  OpRowOptions rows;
  rows.arch = arch;
  rows.batch = batch;
  rows.image_size = options.image_size;
  rows.dtypes = selected_dtypes(options);
  rows.filter = options.filter;
  rows.baseline = options.baseline;
  return rows;
}

std::vector<Row> run_cpu(const Options& options) {
  const std::string arch = options.arch.empty() ? "resnet18" : options.arch;
  const int64_t batch = options.batch > 0 ? options.batch : 8;
  OpRowOptions rows = op_row_options(options, arch, batch);
  rows.threads = omp_get_max_threads();
  rows.rounds = options.rounds > 0 ? options.rounds : 2;
  std::fprintf(stderr,
               "CPU: %d threads, %s batch %lld, bf16 products: %s; baseline: PyTorch (same "
               "threads; bf16: its faster of NCHW and channels_last); fastest of %d rounds\n",
               rows.threads, arch.c_str(), static_cast<long long>(batch),
               cpu::bf16_products_name(cpu::bf16_products()), rows.rounds);
  Stream stream;
  return run_op_rows(rows, stream, TimingOptions{options.min_seconds, 3});
}

// With --json, prints the rows measured since its last call: a GPU run stopped at its time
// limit (scripts/gpu-check) keeps every layer it timed.
class RowPrinter {
 public:
  explicit RowPrinter(bool json) : json_(json) {}
  void print_new(const std::vector<Row>& rows) {
    if (!json_) return;
    for (; printed_ < rows.size(); ++printed_)
      std::printf("%s\n", to_json(rows[printed_]).c_str());
    std::fflush(stdout);
  }

 private:
  bool json_;
  size_t printed_ = 0;
};

#if ENGINE_HAVE_CUDA
std::vector<Row> run_gpu(const Options& options, Device device, RowPrinter& printer) {
  const std::string arch = options.arch.empty() ? "resnet50" : options.arch;
  const int64_t batch = options.batch > 0 ? options.batch : 128;
  const TimingOptions timing{options.min_seconds, 5};
  Stream stream(device);
  OpRowOptions op_rows = op_row_options(options, arch, batch);
  op_rows.measured = [&printer](const std::vector<Row>& rows) { printer.print_new(rows); };
  std::vector<Row> rows = run_op_rows(op_rows, stream, timing);
#if ENGINE_BENCH_GPU_BASELINES
  // Element-wise kernels against the GPU's own copy bandwidth (bytes read + written).
  const int64_t elements = int64_t{64} << 20;
  Tensor a = Tensor::zeros({elements}, DType::f32, device, stream);
  Tensor b = Tensor::zeros({elements}, DType::f32, device, stream);
  Tensor out = Tensor::empty({elements}, DType::f32, device);
  const double copy_us = time_device_memcpy(elements * 4, stream, timing);
  const double relu_us =
      median_stream_time_us([&] { relu_forward(a, out, stream); }, stream, timing);
  const double add_relu_us = median_stream_time_us(
      [&] { add_relu_forward({.a = a, .b = b, .y = out}, stream); }, stream, timing);
  Row copy{"kernels", "memcpy", "d2d copy 256 MiB", copy_us};
  copy.gbps = 2.0 * elements * 4 / (copy_us * 1e3);
  Row relu{"kernels", "native", "relu fwd f32 256 MiB", relu_us};
  relu.gbps = 2.0 * elements * 4 / (relu_us * 1e3);
  relu.baseline = "memcpy";
  relu.baseline_time_us = copy_us;
  Row add_relu{"kernels", "native", "add+relu fwd f32 3x256 MiB", add_relu_us};
  add_relu.gbps = 3.0 * elements * 4 / (add_relu_us * 1e3);
  add_relu.baseline = "cudnn";  // unfused: add, then ReLU in place (gpu_baselines.h)
  add_relu.baseline_time_us = time_cudnn_add_relu(elements, stream, timing);
  rows.insert(rows.end(), {copy, relu, add_relu});
#endif
  return rows;
}
#endif

int run(const Options& options) {
  const Device device = resolve_device(options.device);
  wait_for_startup_threads_to_sleep();
  std::vector<Row> rows;
  RowPrinter printer(options.json);
  if (options.tune) {
    if (device.is_cpu()) throw cli::UsageError("--tune needs a CUDA device (--device cuda)");
    const std::string arch = options.arch.empty() ? "resnet50" : options.arch;
    const int64_t batch = options.batch > 0 ? options.batch : 128;
    Stream stream(device);
    // The passes as a training step runs them (their BatchNorm fusion), from the model itself.
    nn::ResNet model(arch, {.num_classes = 1000, .seed = 1});
    model.allocate(device, stream);
    model.set_fusion(options.fusion);
    const Shape images = {batch, options.image_size, options.image_size, 3};
    const Fp32Math math = options.tf32 ? Fp32Math::tf32 : Fp32Math::exact;
    run_conv_tune_table(selected_layers(options, arch, batch), stream,
                        {.dtypes = selected_dtypes(options),
                         .tf32 = options.tf32,
                         .samples = cuda_is_sim_device() ? 1 : 5,
                         .out = options.tune_out,
                         .step_problems = [&](DType dtype) {
                           return model.counted_conv_problems(images, dtype, math);
                         }});
    return 0;
  }
  if (device.is_cpu()) {
    rows = run_cpu(options);
  } else {
#if ENGINE_HAVE_CUDA
    rows = run_gpu(options, device, printer);
#endif
  }
  if (options.json) {
    printer.print_new(rows);
  } else {
    print_table(rows);
  }
  return 0;
}

}  // namespace
}  // namespace engine::bench

int main(int argc, char** argv) {
  using namespace engine::bench;
  return engine::cli::run_program<Options>(
      argc, argv, make_command,
      [](const Options& o) {
        if (o.fusion != engine::nn::BatchNormFusion::full && !o.tune) {
          throw engine::cli::UsageError(
              "--fusion (and --no-fusion) choose the passes --tune times: use them with --tune");
        }
      },
      run);
}
