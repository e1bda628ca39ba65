// bench_step: one training step of a torchvision ResNet (forward in train mode, cross-entropy,
// backward, SGD with momentum and weight decay) in images/s, beside the same step in PyTorch
// (tools/bench_torch_step.py: the torchvision model; on the CPU the same threads, timed in
// both of its memory formats, the faster one kept as the baseline; on a GPU channels_last with
// cudnn.benchmark, TF32 on for --precision tf32 and off for fp32, bf16 autocast for bf16),
// case by case in the same run.
//
//   bench_step [-a resnet18] [--image-size 64] [-b 32] [--threads 2] [--device cpu]
//              [--classes 1000] [--min-seconds 1] [--min-steps 3] [--rounds 2]
//              [--no-baseline] [--json] [--precision fp32|tf32|bf16] [--profile]
//              [--profile-steps 5] [--cuda-graph auto|on|off]
// --profile drives the model's top-level layers one by one and prints where a step spends
// its time (forward and backward per layer, the loss, the optimizer), the mean of
// --profile-steps steps after a warm one.
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "bench/launch_census.h"
#include "bench/timing.h"
#include "bench/torch_baseline.h"
#include "kernels/conv_plans.h"
#include "kernels/cpu/isa.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kernels/cuda/gemm_choice.h"
#include "kernels/cuda_graph.h"
#include "kernels/kernel_launches.h"
#include "kernels/memory.h"
#include "kernels/nvtx.h"
#include "kernels/runtime.h"
#include "nn/conv_tuning.h"
#include "nn/cross_entropy.h"
#include "nn/precision.h"
#include "nn/resnet.h"
#include "nn/sgd.h"
#include "train/common_flags.h"

namespace engine::bench {
namespace {

constexpr const char* kTimedStepsRange = "bench_step timed steps";

struct Options {
  std::string arch = "resnet18";
  int64_t image_size = 64;
  int64_t batch = 32;
  int threads = 2;
  std::string device = "cpu";
  int64_t classes = 1000;
  double min_seconds = 1.0;
  int min_steps = 3;
  int rounds = 2;
  bool baseline = true;
  bool json = false;
  bool profile = false;
  int profile_steps = 5;
  bool launches_only = false;  // count one warm step's launches, time nothing
  bool launch_census = false;  // ... and print them kernel by kernel
  bool memory_only = false;    // print the device memory once set up, run nothing
  nn::Precision precision;     // fp32
  nn::ConvTuning conv_tuning;
  nn::BatchNormFusion fusion = nn::BatchNormFusion::full;  // --fusion
  bool shared_gradients = true;                            // --per-layer-gradients: false
  cli::CudaGraphMode cuda_graph = cli::CudaGraphMode::automatic;
};

cli::Command make_command(Options& o) {
  cli::Command command(
      "bench_step", "[flags]",
      "Times one training step (forward, cross-entropy, backward, SGD momentum 0.9, weight decay "
      "1e-4) of a ResNet against torchvision's in PyTorch on the same device: on the CPU with the "
      "same threads, its faster memory format (NCHW or channels_last) as the baseline; on a GPU "
      "channels_last with cudnn.benchmark. Each round times our step, after one warm-up step, "
      "for --min-seconds and at least --min-steps steps (the median); each side keeps its "
      "fastest round. --precision tf32 (CUDA only) compares with PyTorch with TF32 on (fp32: "
      "off); bf16 with PyTorch's bf16 autocast (fp32 weights); on the CPU the note names how our "
      "bf16 products ran (amx, avx512-bf16 or widened-fp32).\n"
      "ENGINE_TORCH_PYTHON names the python with torch (default /usr/bin/python3).");
  cli::add_arch(command, o.arch);
  cli::add_image_size(command, o.image_size, "input images' side");
  cli::add_batch_size(command, o.batch, "images per step", 2, "BatchNorm needs two values");
  command.integer("--threads", o.threads, "OpenMP threads, ours and PyTorch's");
  cli::add_device(command, o.device);
  command.integer("--classes", o.classes, "the fc layer's outputs");
  command.number("--min-seconds", o.min_seconds, "timed per round");
  command.integer("--min-steps", o.min_steps, "timed steps per round, at least");
  command.integer("--rounds", o.rounds, "rounds; each side keeps its fastest");
  cli::add_precision(command, o.precision);
  cli::add_conv_tuning(command, o.conv_tuning);
  cli::add_fusion(command, o.fusion);
  cli::add_cuda_graph(command, o.cuda_graph,
                      "auto|on|off: capture the step (forward, loss, backward, SGD) once after a "
                      "warm step as a CUDA graph and replay it: one launch instead of hundreds "
                      "(auto: on a CUDA device; off: kernel by kernel, to compare)");
  command.flag(
      "--no-baseline", [&o] { o.baseline = false; }, "time ours only");
  cli::add_json(command, o.json);
  command.flag("--profile", o.profile,
               "also print the time of each top-level layer's forward and backward, the loss "
               "and SGD");
  command.integer("--profile-steps", o.profile_steps,
                  "--profile: steps averaged, after a warm one");
  command.flag("--memory-only", o.memory_only,
               "CUDA: print the device memory the model holds once set up (parameters, "
               "gradients, activations, workspaces, the batch), running nothing; two batches "
               "give the bytes per image");
  command.flag(
      "--per-layer-gradients", [&o] { o.shared_gradients = false; },
      "a buffer per layer for the activation gradients instead of the two the layers share "
      "(nn/gradient_arena.h), to compare");
  command.flag("--launches-only", o.launches_only,
               "CUDA: count our kernel launches of one warm step and print them, timing nothing "
               "and starting no baseline (ctest launches_per_step)");
  command.flag("--launch-census", o.launch_census,
               "CUDA: --launches-only, then the step's launches kernel by kernel and by kernel "
               "family (on the sim device, ENGINE_SIM_KERNELS=skip counts a GPU-sized step "
               "without running its kernels)");
  return command;
}

void check(Options& o) {
  if (o.launch_census) o.launches_only = true;
  if (o.threads < 1 || o.classes < 1 || o.rounds < 1 || o.min_steps < 1 || o.profile_steps < 1 ||
      !(o.min_seconds > 0)) {
    throw cli::UsageError(
        "--threads, --classes, --min-steps, --rounds and --profile-steps must be >= 1, "
        "--min-seconds > 0");
  }
}

// Our model, data and optimizer for one case, set up once.
class NativeStep {
 public:
  NativeStep(const Options& o, Device device)
      : stream_(device), model_(o.arch, {.num_classes = o.classes, .seed = 1}) {
    model_.allocate(device, stream_);
    stream_.set_fp32_math(o.precision.fp32_math);
    const Shape images = {o.batch, o.image_size, o.image_size, 3};
    // The convolutions' algorithms as resnet_train chooses them (--conv-tuning).
    nn::ConvPlanChoice plans = nn::choose_conv_plans(
        o.conv_tuning, model_.conv_problems(images, o.precision.activations, o.precision.fp32_math),
        stream_);
    for (const std::string& warning : plans.warnings)
      std::fprintf(stderr, "bench_step: warning: %s\n", warning.c_str());
    conv_summary_ = plans.summary;
    conv_plans_ = std::move(plans.plans);
    model_.set_fusion(o.fusion);
    model_.set_shared_gradients(o.shared_gradients);
    model_.setup(images, o.precision.activations, stream_, &conv_plans_);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::vector<float> pixels(static_cast<size_t>(o.batch * o.image_size * o.image_size * 3));
    for (float& v : pixels)
      v = normal(rng);
    std::vector<int32_t> labels(static_cast<size_t>(o.batch));
    for (size_t i = 0; i < labels.size(); ++i)
      labels[i] = static_cast<int32_t>(rng() % o.classes);
    images_ = Tensor::from_floats({o.batch, o.image_size, o.image_size, 3}, pixels,
                                  o.precision.activations)
                  .to(device, stream_);
    labels_ = Tensor::from_ints({o.batch}, labels).to(device, stream_);
    loss_.setup(o.batch, o.classes, o.precision.activations, device);
    nn::SgdConfig config;
    config.lr = 0.1f;
    config.momentum = 0.9f;
    config.weight_decay = 1e-4f;
    sgd_ = std::make_unique<nn::Sgd>(model_.params(), config, stream_);
    // As resnet_train (train/trainer_model.cpp): on the CPU the step writes the bf16 weights.
    if (device.is_cpu()) sgd_->write_compute_copy(&model_.weight_copy());
  }

  // One step: the captured graph's replay once capture_step() has run, else kernel by kernel.
  void run() {
    if (graph_.defined()) {
      graph_.replay(stream_);
    } else {
      run_uncaptured();
    }
  }
  void run_uncaptured() {
    nn::Pass pass{stream_, true, false, {}};
    model_.params().zero_grad();
    loss_.forward(model_.forward(images_, pass), labels_, stream_);
    model_.backward(loss_.backward(stream_), pass);
    sgd_->step(0.1f, stream_);
  }
  // After a warm step (the optimizer's state exists): the step as a CUDA graph from now on.
  void capture_step() {
    graph_ = CudaGraph::capture(stream_, "the training step", [this] { run_uncaptured(); });
  }
  const CudaGraph& graph() const { return graph_; }
  Stream& stream() { return stream_; }
  const nn::ResNet& model() const { return model_; }

  // One step with every top-level layer timed (synchronized after each), added to `times`:
  // [layer] = {forward us, backward us}, then "loss" and "sgd".
  void run_profiled(std::vector<std::pair<std::string, std::pair<double, double>>>& times) {
    std::vector<nn::Layer*> layers;
    model_.layers().for_each_child([&](nn::Layer& layer) { layers.push_back(&layer); });
    if (times.empty()) {
      for (const nn::Layer* layer : layers)
        times.push_back({layer->name(), {0, 0}});
      times.push_back({"loss (fwd, bwd)", {0, 0}});
      times.push_back({"sgd", {0, 0}});
    }
    const auto timed = [&](double& total, auto&& fn) {
      const auto start = std::chrono::steady_clock::now();
      fn();
      stream_.synchronize();
      total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                   .count();
    };
    nn::Pass pass{stream_, true, false, {}};
    model_.params().zero_grad();
    const Tensor* x = &images_;
    for (size_t i = 0; i < layers.size(); ++i)
      timed(times[i].second.first, [&] { x = &layers[i]->forward(*x, pass); });
    const Tensor* g = nullptr;
    auto& loss_time = times[layers.size()].second;
    timed(loss_time.first, [&] { loss_.forward(*x, labels_, stream_); });
    timed(loss_time.second, [&] { g = &loss_.backward(stream_); });
    pass.accumulate_grads = model_.params().grads_hold_values();
    for (size_t i = layers.size(); i-- > 0;)
      timed(times[i].second.second, [&] { g = &layers[i]->backward(*g, pass); });
    model_.params().mark_grads_written();
    timed(times.back().second.first, [&] { sgd_->step(0.1f, stream_); });
  }

  // How the convolutions' algorithms were chosen (--conv-tuning), "" on the CPU.
  const std::string& conv_summary() const { return conv_summary_; }

 private:
  Stream stream_;
  nn::ResNet model_;
  nn::CrossEntropyLoss loss_;
  std::unique_ptr<nn::Sgd> sgd_;
  Tensor images_, labels_;
  CudaGraph graph_;
  ConvPlans conv_plans_;
  std::string conv_summary_;
};

// The step's name, with each way it departs from the default step (gpu-check's A/B rows;
// tools/step_memory_floor.py reads the default's alone).
std::string case_name(const Options& o) {
  std::string name = o.arch + " " + std::to_string(o.image_size) + "x" +
                     std::to_string(o.image_size) + " b" + std::to_string(o.batch) + " " +
                     std::string(nn::precision_name(o.precision)) + " train step";
  if (o.fusion != nn::BatchNormFusion::full)
    name += " fusion=" + std::string(nn::batchnorm_fusion_name(o.fusion));
  if (o.cuda_graph == cli::CudaGraphMode::off) name += " graph=off";
  if (!o.shared_gradients) name += " per-layer-gradients";
  if (cuda::environment_gated_sums() == cuda::GatedSums::reread) name += " gated-sums=reread";
  return name;
}

// The mean of a few profiled steps, per top-level layer, with each one's share of the step.
void print_profile(NativeStep& step, const Options& o) {
  std::vector<std::pair<std::string, std::pair<double, double>>> times;
  const int steps = o.profile_steps;
  step.run_profiled(times);  // warm-up
  times.clear();
  for (int i = 0; i < steps; ++i)
    step.run_profiled(times);
  double total = 0;
  for (const auto& [name, t] : times)
    total += t.first + t.second;
  std::printf("profile: %s, mean of %d steps, %.1f ms per step (synchronized per layer)\n",
              case_name(o).c_str(), steps, total / steps / 1e3);
  std::printf("%-20s %10s %10s %7s\n", "layer", "fwd_ms", "bwd_ms", "share");
  for (const auto& [name, t] : times) {
    std::printf("%-20s %10.2f %10.2f %6.1f%%\n", name.c_str(), t.first / steps / 1e3,
                t.second / steps / 1e3, 100 * (t.first + t.second) / total);
  }
}

int run(const Options& o) {
  const Device device = resolve_device(o.device);
  cli::check_precision_device(o.precision, device);
  omp_set_num_threads(o.threads);
  wait_for_startup_threads_to_sleep();
  if (o.memory_only && !device.is_cuda())
    throw cli::UsageError("--memory-only reads the CUDA allocator: use --device cuda");
  NativeStep ours(o, device);
  if (o.memory_only) {
    ours.stream().synchronize();
    const CachingAllocator::Stats memory = device_allocator(device.index).stats();
    std::printf("bench_step: %s on %s: %.1f MiB of device memory in use once set up\n",
                case_name(o).c_str(), device.str().c_str(),
                static_cast<double>(memory.bytes_in_use) / (1024.0 * 1024.0));
    // Each layer's own is what --per-layer-gradients holds instead.
    const nn::ResNet::GradientMemory gradients = ours.model().gradient_memory();
    const double element_mib =
        static_cast<double>(dtype_size(o.precision.activations)) / (1024.0 * 1024.0);
    std::printf(
        "bench_step: activation gradients: %.1f MiB in two shared buffers, %.1f MiB as "
        "a buffer per layer\n",
        static_cast<double>(gradients.shared) * element_mib,
        static_cast<double>(gradients.per_layer) * element_mib);
    return 0;
  }
  // The baseline: PyTorch on the same device, fp32 or bf16 autocast: on the CPU in both memory
  // formats, on a GPU channels_last; none on the sim device (no PyTorch runs there).
  const bool gpu = device.is_cuda();
  const bool sim = gpu && cuda_is_sim_device();
  if (o.launches_only && !gpu)
    throw cli::UsageError("--launches-only counts CUDA launches: use --device cuda");
  const bool graphed = cli::cuda_graph_enabled(o.cuda_graph, device) && !o.launches_only;
  std::string no_baseline_note;
  std::unique_ptr<TorchProcess> torch;
  if (!o.baseline || o.launches_only) {
    no_baseline_note = "--no-baseline";
  } else if (sim) {
    no_baseline_note = "no PyTorch baseline on the sim device";
  } else {
    torch = std::make_unique<TorchProcess>("bench_torch_step.py", o.threads, o.min_seconds);
  }
  const int torch_results = gpu ? 1 : 2;  // the memory formats it times
  const std::string line = case_name(o) + "\t" + o.arch + "\t" + std::to_string(o.image_size) +
                           "\t" + std::to_string(o.batch) + "\t" + std::to_string(o.classes) +
                           "\t" + (gpu ? "cuda" : "cpu") + "\t" +
                           std::string(nn::precision_name(o.precision));
  const TimingOptions timing{o.min_seconds, o.min_steps};
  // Our kernels one step launches (a step's are the same every time): counted on a warm step.
  std::optional<int64_t> launches;
  std::string census;
  if (gpu) {
    ours.run();
    ours.stream().synchronize();
    const uint64_t before = kernel_launches();
    if (o.launch_census) start_launch_census();
    ours.run();
    ours.stream().synchronize();
    launches = static_cast<int64_t>(kernel_launches() - before);
    if (o.launch_census) {
      census = launch_census_table(stop_launch_census(), [](const void* kernel) {
        return cuda_runtime::kernel_function_name(kernel);
      });
    }
  }
  if (graphed) ours.capture_step();
  if (o.launches_only) {
    Row row("step", "native", case_name(o), 0);
    row.kernel_launches = launches;
    row.note = "--launches-only: not timed";
    if (o.json) {
      std::printf("%s\n", to_json(row).c_str());
    } else {
      std::printf("bench_step: %s on %s: %lld kernel launches per step (ours)\n",
                  case_name(o).c_str(), device.str().c_str(), static_cast<long long>(*launches));
    }
    // (after the JSON row, which check_launches.py reads as the last line: on stderr)
    if (o.launch_census) std::fprintf(o.json ? stderr : stdout, "%s", census.c_str());
    return 0;
  }
  std::vector<std::vector<Row>> rounds;
  std::string torch_format;
  for (int r = 0; r < o.rounds; ++r) {
    Row row("step", "native", case_name(o), 0);
    if (torch) {
      row.baseline = "torch";
      const auto times = torch->time_case(line, torch_results);
      for (const auto& [format, us] : times) {
        if (!row.baseline_time_us || us < *row.baseline_time_us) {
          row.baseline_time_us = us;
          torch_format = format.substr(5);  // "nchw" or "channels_last"
        }
      }
      if (times.empty()) row.note = torch->unavailable_reason();
    } else {
      row.note = no_baseline_note;
    }
    // An NVTX range around our timed steps only: gpu-check's Nsight Systems run captures it
    // (--capture-range nvtx) to measure the GPU's idle time between kernels (tools/kernel_gaps.py).
    nvtx_push(kTimedStepsRange);
    row.time_us = median_time_us([&] { ours.run(); }, [&] { ours.stream().synchronize(); }, timing);
    nvtx_pop();
    row.images_per_s = static_cast<double>(o.batch) / (row.time_us * 1e-6);
    rounds.push_back({row});
  }
  Row best = fastest_of_rounds(rounds).front();
  best.kernel_launches = launches;
  if (graphed) best.graph_nodes = static_cast<int64_t>(ours.graph().nodes());
  if (o.profile && !o.json) print_profile(ours, o);
  if (!torch_format.empty() && best.note.empty()) {
    best.note = "torch " + torch_format;
    if (!gpu && o.precision.activations == DType::bf16) {
      best.note +=
          std::string(", bf16 autocast; ours ") + cpu::bf16_products_name(cpu::bf16_products());
    }
    if (gpu) {
      const nn::Precision p = o.precision;
      best.note += std::string(p.activations == DType::bf16    ? ", bf16 autocast"
                               : p.fp32_math == Fp32Math::tf32 ? ", TF32 on"
                                                               : ", fp32 no TF32") +
                   ", cudnn.benchmark";
    }
  }
  if (o.json) {
    std::printf("%s\n", to_json(best).c_str());
    return 0;
  }
  std::printf("bench_step: %s on %s, %d threads, fastest of %d rounds\n", case_name(o).c_str(),
              device.str().c_str(), o.threads, o.rounds);
  if (!ours.conv_summary().empty()) std::printf("%s\n", ours.conv_summary().c_str());
  if (launches) {
    std::printf("kernel launches per step: %lld (ours; not NCCL's, cuDNN's or cuBLAS's)\n",
                static_cast<long long>(*launches));
  }
  if (gpu) {
    std::printf("%s\n", graphed ? ("CUDA graph: on, the step replayed as one graph of " +
                                   std::to_string(ours.graph().nodes()) + " nodes")
                                      .c_str()
                                : "CUDA graph: off, the step launched kernel by kernel");
  }
  std::printf("%-40s %12s %10s %12s %10s %7s  %s\n", "case", "time_us", "img/s", "torch_us",
              "torch img/s", "ratio", "note");
  std::string torch_us = "-", torch_images_per_s = "-", ratio = "-";
  if (best.baseline_time_us) {
    torch_us = std::to_string(static_cast<int64_t>(*best.baseline_time_us));
    torch_images_per_s =
        std::to_string(static_cast<int64_t>(o.batch / (*best.baseline_time_us * 1e-6)));
  }
  if (const auto r = best.ratio()) ratio = std::to_string(*r).substr(0, 4) + "x";
  std::printf("%-40s %12.0f %10.1f %12s %10s %7s  %s\n", best.case_name.c_str(), best.time_us,
              *best.images_per_s, torch_us.c_str(), torch_images_per_s.c_str(), ratio.c_str(),
              best.note.c_str());
  return 0;
}

}  // namespace
}  // namespace engine::bench

int main(int argc, char** argv) {
  using namespace engine::bench;
  return engine::cli::run_program<Options>(argc, argv, make_command, check, run);
}
