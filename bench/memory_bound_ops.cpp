#include "bench/memory_bound_ops.h"

#include <functional>
#include <map>
#include <string>

#include "bench/torch_baseline.h"
#include "kernels/ops.h"
#if ENGINE_HAVE_CUDA
#include "kernels/cuda/cuda_runtime.h"
#endif

namespace engine::bench {

namespace {

struct Activation {
  std::string name;
  int64_t n, h, w, c;
  int64_t numel() const { return n * h * w * c; }
};

std::vector<Activation> resnet18_activations(int64_t batch) {
  return {{"stem out", batch, 112, 112, 64},
          {"layer1", batch, 56, 56, 64},
          {"layer2", batch, 28, 28, 128},
          {"layer3", batch, 14, 14, 256},
          {"layer4", batch, 7, 7, 512}};
}

// The stem's output is the one activation a max-pool reads.
bool is_pooled(const Activation& a) {
  return a.name == "stem out";
}

// One op on one activation: how to run it and the bytes it must move at the least.
struct OpCase {
  std::string op;  // the name tools/bench_torch_ops.py knows
  std::function<void()> run;
  double bytes;
};

std::vector<OpCase> op_cases(const Activation& a, Stream& stream, std::vector<Tensor>& keep) {
  const Device device = stream.device();
  const int64_t c = a.c;
  const double size = 4.0 * a.numel();
  Tensor x = Tensor::zeros({a.n, a.h, a.w, c}, DType::f32, device, stream);
  fill(x, 0.5f, stream);
  Tensor y = Tensor::empty(x.shape(), DType::f32, device);
  Tensor dx = Tensor::empty(x.shape(), DType::f32, device);
  Tensor ones = Tensor::zeros({c}, DType::f32, device, stream);
  fill(ones, 1.f, stream);
  Tensor zeros = Tensor::zeros({c}, DType::f32, device, stream);
  Tensor running_mean = Tensor::zeros({c}, DType::f32, device, stream);
  Tensor running_var = Tensor::zeros({c}, DType::f32, device, stream);
  Tensor stats = Tensor::empty({batchnorm_stats_numel(c)}, DType::f32, device);
  Tensor batch_stats = Tensor::empty({batchnorm_stats_numel(c)}, DType::f32, device);
  Tensor grad_sums = Tensor::empty({2 * c}, DType::f32, device);
  Tensor workspace =
      Tensor::empty({std::max<int64_t>(batchnorm_workspace_numel(x), 1)}, DType::f32, device);
  keep.insert(keep.end(), {x, y, dx, ones, zeros, running_mean, running_var, stats, batch_stats,
                           grad_sums, workspace});
  std::vector<OpCase> cases;
  // Training forward: statistics pass over x, then normalize (reads x, writes y).
  cases.push_back({"bn_forward",
                   [=, &stream]() mutable {
                     batchnorm_stats(x, stats, workspace, stream);
                     batchnorm_finalize(stats, running_mean, running_var, 0.1f, 1e-5f, batch_stats,
                                        stream);
                     batchnorm_normalize(x, batch_stats, ones, zeros, y, stream);
                   },
                   3 * size});
  // Backward: reduce (reads dy, x), then elementwise (reads dy, x, writes dx); dy = y here.
  cases.push_back({"bn_backward",
                   [=, &stream]() mutable {
                     batchnorm_backward_reduce(y, x, batch_stats, grad_sums, workspace, stream);
                     batchnorm_backward_elementwise(y, x, batch_stats, ones, grad_sums, dx, stream);
                   },
                   5 * size});
  cases.push_back({"relu", [=, &stream]() mutable { relu_forward(x, y, stream); }, 2 * size});
  if (is_pooled(a)) {
    const MaxPool2dParams pool;
    Tensor pooled =
        Tensor::empty({a.n, pool.output_size(a.h), pool.output_size(a.w), c}, DType::f32, device);
    Tensor argmax = Tensor::empty(pooled.shape(), DType::f32, device);
    keep.insert(keep.end(), {pooled, argmax});
    cases.push_back({"maxpool",
                     [=, &stream]() mutable { maxpool2d_forward(pool, x, pooled, argmax, stream); },
                     size + 2.0 * 4 * pooled.numel()});
  }
  return cases;
}

}  // namespace

std::vector<Row> run_memory_bound_ops(int64_t batch, Stream& stream, const TimingOptions& timing,
                                      bool with_baseline, int threads) {
  const std::vector<Activation> activations = resnet18_activations(batch);
  const bool gpu = stream.device().is_cuda();
  TorchBaseline torch;
  if (!gpu && with_baseline) {
    std::vector<std::string> lines;
    for (const Activation& a : activations) {
      for (const char* op : {"bn_forward", "bn_backward", "relu", "maxpool"}) {
        if (std::string(op) == "maxpool" && !is_pooled(a)) continue;
        lines.push_back(a.name + "\t" + op + "\t" + std::to_string(a.n) + "\t" +
                        std::to_string(a.h) + "\t" + std::to_string(a.w) + "\t" +
                        std::to_string(a.c));
      }
    }
    torch = run_torch_baseline("bench_torch_ops.py", lines, threads, timing.min_seconds);
  }
  auto sync = [&] { stream.synchronize(); };
  std::vector<Row> rows;
  for (const Activation& a : activations) {
    std::vector<Tensor> keep;
    for (const OpCase& op : op_cases(a, stream, keep)) {
      const std::string case_name = "resnet18 " + a.name + " [" + std::to_string(a.n) + ", " +
                                    std::to_string(a.h) + ", " + std::to_string(a.w) + ", " +
                                    std::to_string(a.c) + "] " + op.op;
      Row row("kernels", "native", case_name, median_time_us(op.run, sync, timing));
      row.gbps = op.bytes / (row.time_us * 1e3);
      row.bytes = static_cast<int64_t>(op.bytes);
      if (gpu) {
#if ENGINE_HAVE_CUDA
        // The same bytes at the device's copy bandwidth: a copy of bytes/2 reads and writes.
        const int64_t copy_elements = static_cast<int64_t>(op.bytes / 8);
        Tensor src = Tensor::zeros({copy_elements}, DType::f32, stream.device(), stream);
        Tensor dst = Tensor::empty({copy_elements}, DType::f32, stream.device());
        row.baseline = "memcpy";
        row.baseline_time_us = median_time_us([&] { copy(src, dst, stream); }, sync, timing);
#endif
      } else if (with_baseline) {
        row.baseline = "torch";
        const auto found = torch.time_us.find({a.name, op.op});
        if (found != torch.time_us.end()) {
          row.baseline_time_us = found->second;
        } else {
          row.note = torch.unavailable_reason;
        }
      }
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace engine::bench
