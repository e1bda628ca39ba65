// bench_kernels: every op family of a ResNet training step against a baseline timed in the
// same run: our conv2d passes per layer shape (PyTorch 1.13 on the CPU via
// tools/bench_torch_kernels.py, cuDNN on a GPU), then the other ops (bench/op_rows.h: BatchNorm,
// ReLU, add+ReLU, pooling, the fc layer, cross-entropy, top-k, SGD), plus element-wise bandwidth
// against device memcpy on a GPU. On the sim device (ENGINE_CUDA=SIM) the baseline of every
// row is the CPU backend on the same op: the emulator's speed relative to the CPU it runs on.
// --filter TEXT keeps the conv layers and op cases whose name contains TEXT (e.g. "layer3", "fc",
// "sgd").
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
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_report.h"
#include "bench/conv_tune_table.h"
#include "bench/op_rows.h"
#include "bench/ops/op_description.h"
#include "bench/resnet_layers.h"
#include "bench/timing.h"
#include "bench/torch_baseline.h"
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
  return command;
}

double conv_gflops(const Conv2dShape& s, double time_us) {
  return 2.0 * s.gemm_m() * s.out_channels * s.gemm_k() / (time_us * 1e3);
}

struct PassTimes {
  double forward_us, backward_data_us, backward_filter_us;
};

// Our three passes of each layer as the op registry's convolution cases run them (random
// operands on the device, the workspaces the layers pass), timed one layer at a time.
class NativeConv {
 public:
  NativeConv(const std::string& arch, int64_t batch, int64_t image_size)
      : arch_(arch), model_(op_registry::model_shapes(arch, batch, image_size)) {}

  PassTimes time(const ConvLayer& layer, DType dtype, Stream& stream, const TimingOptions& timing) {
    // The bench names a layer "<arch> <layer>"; the registry's cases "<layer> <input shape>".
    const std::string name =
        layer.name.substr(arch_.size() + 1) + " " + shape_str(layer.shape.input_shape());
    auto pass_us = [&](op_registry::OpId op) {
      const op_registry::OpCase& c = find(op, dtype, name);
      const op_registry::Prepared prepared = c.prepare(stream, op_registry::Inputs::fast);
      return median_stream_time_us(prepared.call, stream, timing);
    };
    return {pass_us(op_registry::OpId::conv2d_forward),
            pass_us(op_registry::OpId::conv2d_backward_data),
            pass_us(op_registry::OpId::conv2d_backward_filter)};
  }

 private:
  const op_registry::OpCase& find(op_registry::OpId op, DType dtype, const std::string& name) {
    auto [cached, added] = cases_.try_emplace({op, dtype});
    if (added) cached->second = op_registry::describe(op).cases(model_, dtype);
    for (const op_registry::OpCase& c : cached->second) {
      if (c.name == name && c.fp32_math == Fp32Math::exact) return c;
    }
    fail("bench_kernels: the op registry has no " + std::string(op_registry::op_name(op)) +
         " case '" + name + "' in " + std::string(dtype_name(dtype)));
  }

  std::string arch_;
  op_registry::ModelShapes model_;
  std::map<std::pair<op_registry::OpId, DType>, std::vector<op_registry::OpCase>> cases_;
};

void add_pass_rows(std::vector<Row>& rows, const ConvLayer& layer, const std::string& suffix,
                   const PassTimes& ours, const std::string& baseline_name,
                   const std::optional<PassTimes>& baseline, const std::string& note) {
  const char* passes[] = {"fwd", "bwd_data", "bwd_filter"};
  const double our_times[] = {ours.forward_us, ours.backward_data_us, ours.backward_filter_us};
  for (int p = 0; p < 3; ++p) {
    Row row{"kernels", "native", layer.name + " " + passes[p] + suffix, our_times[p]};
    row.gflops = conv_gflops(layer.shape, our_times[p]);
    row.baseline = baseline_name;
    if (baseline) {
      const double base[] = {baseline->forward_us, baseline->backward_data_us,
                             baseline->backward_filter_us};
      row.baseline_time_us = base[p];
    }
    row.note = note;
    rows.push_back(row);
  }
}

// fwd+bwd over the whole network: each layer's three passes weighted by its count.
Row network_total(const std::string& name, const std::vector<ConvLayer>& layers,
                  const std::vector<Row>& rows, const std::string& baseline) {
  Row total{"kernels", "native", name, 0};
  total.baseline = baseline;
  double base = 0;
  bool complete = true;
  for (size_t i = 0; i < layers.size(); ++i) {
    for (int p = 0; p < 3; ++p) {
      const Row& row = rows[rows.size() - 3 * layers.size() + 3 * i + p];
      total.time_us += layers[i].count * row.time_us;
      if (row.baseline_time_us)
        base += layers[i].count * *row.baseline_time_us;
      else
        complete = false;
    }
  }
  if (complete && !baseline.empty()) total.baseline_time_us = base;
  return total;
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

OpRowOptions op_row_options(const Options& options, const std::string& arch, int64_t batch,
                            std::vector<DType> gemm_dtypes, int threads) {
  OpRowOptions rows;
  rows.arch = arch;
  rows.batch = batch;
  rows.image_size = options.image_size;
  rows.gemm_dtypes = std::move(gemm_dtypes);
  rows.filter = options.filter;
  rows.baseline = options.baseline;
  rows.threads = threads;
  return rows;
}

// The dtypes --dtype asks for, in table order.
std::vector<DType> selected_dtypes(const Options& options) {
  std::vector<DType> dtypes;
  for (DType dtype : {DType::f32, DType::bf16}) {
    if (options.dtype == "both" || parse_dtype(options.dtype) == dtype) dtypes.push_back(dtype);
  }
  return dtypes;
}

std::string dtype_suffix(DType dtype) {
  return std::string(" ") + std::string(dtype_name(dtype));
}

// One round on the CPU: the conv rows (three per layer and dtype) and the op rows (fp32),
// each with PyTorch's time from a baseline run of this round.
std::pair<std::vector<Row>, std::vector<Row>> run_cpu_round(const Options& options,
                                                            const std::string& arch, int64_t batch,
                                                            const std::vector<ConvLayer>& layers) {
  const TimingOptions timing{options.min_seconds, 3};
  NativeConv native(arch, batch, options.image_size);
  const int threads = omp_get_max_threads();
  TorchProcess torch = options.baseline
                           ? TorchProcess("bench_torch_kernels.py", threads, options.min_seconds)
                           : TorchProcess("--no-baseline");
  std::vector<Row> conv_rows;
  Stream stream;
  for (DType dtype : selected_dtypes(options)) {
    for (const ConvLayer& layer : layers) {
      const std::map<std::string, double> base_times =
          torch.time_case(torch_conv_case(layer, dtype), 3);
      const PassTimes ours = native.time(layer, dtype, stream, timing);
      std::optional<PassTimes> base;
      if (base_times.size() == 3) {
        base =
            PassTimes{base_times.at("fwd"), base_times.at("bwd_data"), base_times.at("bwd_filter")};
      }
      add_pass_rows(conv_rows, layer, dtype_suffix(dtype), ours, "torch", base,
                    base ? "" : torch.unavailable_reason());
    }
  }
  std::vector<Row> op_rows =
      run_op_rows(op_row_options(options, arch, batch, {DType::f32}, threads), stream, timing);
  return {std::move(conv_rows), std::move(op_rows)};
}

std::vector<Row> run_cpu(const Options& options) {
  const std::string arch = options.arch.empty() ? "resnet18" : options.arch;
  const int64_t batch = options.batch > 0 ? options.batch : 8;
  const int rounds = options.rounds > 0 ? options.rounds : 2;
  const std::vector<ConvLayer> layers = selected_layers(options, arch, batch);
  std::fprintf(stderr,
               "CPU: %d threads, %s batch %lld, bf16 products: %s; baseline: PyTorch (same "
               "threads; bf16: its faster of NCHW and channels_last); fastest of %d rounds\n",
               omp_get_max_threads(), arch.c_str(), static_cast<long long>(batch),
               cpu::bf16_products_name(cpu::bf16_products()), rounds);
  std::vector<std::vector<Row>> conv_rounds, op_rounds;
  for (int round = 0; round < rounds; ++round) {
    auto [conv_rows, op_rows] = run_cpu_round(options, arch, batch, layers);
    conv_rounds.push_back(std::move(conv_rows));
    op_rounds.push_back(std::move(op_rows));
  }
  const std::vector<Row> conv_rows = fastest_of_rounds(conv_rounds);
  std::vector<Row> rows;
  const size_t per_dtype = 3 * layers.size();
  size_t begin = 0;
  for (DType dtype : selected_dtypes(options)) {
    rows.insert(rows.end(), conv_rows.begin() + begin, conv_rows.begin() + begin + per_dtype);
    begin += per_dtype;
    if (!layers.empty()) {
      rows.push_back(
          network_total(arch + " all conv layers fwd+bwd" + dtype_suffix(dtype) + " (x count)",
                        layers, rows, "torch"));
    }
  }
  const std::vector<Row> ops = fastest_of_rounds(op_rounds);
  rows.insert(rows.end(), ops.begin(), ops.end());
  return rows;
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
  const std::vector<ConvLayer> layers = selected_layers(options, arch, batch);
  const TimingOptions timing{options.min_seconds, 5};
  Stream stream(device);
  std::vector<Row> rows;
  const std::vector<DType> dtypes = selected_dtypes(options);
  const bool sim = cuda_is_sim_device();
  const std::string conv_baseline = sim ? "cpu" : "cudnn";
  NativeConv native(arch, batch, options.image_size);
  for (DType dtype : dtypes) {
    const std::string suffix = dtype_suffix(dtype);
    for (const ConvLayer& layer : layers) {
      const PassTimes ours = native.time(layer, dtype, stream, timing);
      std::optional<PassTimes> base;
      std::string note;
      if (sim) {
        // The sim device against the CPU backend on the same passes: how much slower the
        // emulated GPU is than the CPU it runs on (cuDNN is not emulated).
        if (options.baseline) {
          Stream cpu;
          base = native.time(layer, dtype, cpu, timing);
        }
      } else {
#if ENGINE_BENCH_GPU_BASELINES
        if (options.baseline) {
          const ConvPassTimes cudnn = time_cudnn_conv(layer.shape, dtype, stream, timing);
          base = PassTimes{cudnn.forward_us, cudnn.backward_data_us, cudnn.backward_filter_us};
          note = "cudnn algos fwd " + std::to_string(cudnn.forward_algo) + ", bwd_data " +
                 std::to_string(cudnn.backward_data_algo) + ", bwd_filter " +
                 std::to_string(cudnn.backward_filter_algo);
        }
#else
        note = "built without cuDNN";
#endif
      }
      add_pass_rows(rows, layer, suffix, ours, conv_baseline, base, note);
      printer.print_new(rows);
    }
    if (!layers.empty()) {
      rows.push_back(network_total(arch + " all conv layers fwd+bwd" + suffix + " (x count)",
                                   layers, rows, conv_baseline));
    }
  }
  const std::vector<Row> ops =
      run_op_rows(op_row_options(options, arch, batch, dtypes, 0), stream, timing);
  rows.insert(rows.end(), ops.begin(), ops.end());
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
    run_conv_tune_table(selected_layers(options, arch, batch), stream,
                        {.dtypes = selected_dtypes(options),
                         .tf32 = options.tf32,
                         .samples = cuda_is_sim_device() ? 1 : 5,
                         .out = options.tune_out});
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
      argc, argv, make_command, [](const Options&) {}, run);
}
