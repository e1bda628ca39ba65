#include "bench/op_rows.h"

#include <functional>
#include <map>
#include <memory>
#include <utility>

#include "bench/op_cases.h"
#include "bench/op_runners.h"
#include "bench/torch_baseline.h"
#include "kernels/ops/copy.h"
#include "kernels/runtime.h"
#if ENGINE_BENCH_GPU_BASELINES
#include "bench/gpu_baselines.h"
#endif

namespace engine::bench {

namespace {

std::vector<OpCase> selected_cases(const OpRowOptions& options) {
  std::vector<OpCase> cases;
  for (OpCase& c : resnet_op_cases(options.arch, options.batch, options.image_size)) {
    if (options.filter.empty() || c.name.find(options.filter) != std::string::npos)
      cases.push_back(std::move(c));
  }
  return cases;
}

// The same bytes at the device's copy bandwidth: a copy of bytes / 2 reads and writes them.
double device_copy_us(double bytes, Stream& stream, const TimingOptions& timing) {
  const int64_t elements = static_cast<int64_t>(bytes / 8);
  Tensor src = Tensor::zeros({elements}, DType::f32, stream.device(), stream);
  Tensor dst = Tensor::empty({elements}, DType::f32, stream.device());
  return median_stream_time_us([&] { copy(src, dst, stream); }, stream, timing);
}

// Each row's baseline, timed right before the row: PyTorch on the CPU; on a GPU, cuBLAS for the
// GEMMs, cuDNN's unfused add then ReLU for add+ReLU, and a device copy of the same bytes for
// the other memory-bound ops; on the sim device, the CPU backend.
class Baselines {
 public:
  Baselines(const std::vector<OpCase>& cases, const OpRowOptions& options, Stream& stream,
            const TimingOptions& timing)
      : enabled_(options.baseline),
        gpu_(stream.device().is_cuda()),
        sim_(gpu_ && cuda_is_sim_device()),
        stream_(stream),
        timing_(timing),
        torch_(!options.baseline ? std::make_unique<TorchProcess>("--no-baseline")
               : gpu_ || cases.empty()
                   ? nullptr
                   : std::make_unique<TorchProcess>("bench_torch_ops.py", options.threads,
                                                    timing.min_seconds)) {}

  void attach(const OpCase& c, DType dtype, Row& row) {
    if (!gpu_) {
      row.baseline = "torch";
      const std::map<std::string, double> times = torch_->time_case(torch_request_line(c), 1);
      const auto found = times.find(c.op);
      if (found != times.end()) {
        row.baseline_time_us = found->second;
      } else {
        row.note = torch_->unavailable_reason().empty() ? "no PyTorch time for this case"
                                                        : torch_->unavailable_reason();
      }
      return;
    }
    if (sim_) {
      // The sim device against the CPU backend on the same op: how much slower the emulated GPU
      // is than the CPU it runs on (cuBLAS and cuDNN are not emulated).
      row.baseline = "cpu";
      if (!enabled_) {
        row.note = "--no-baseline";
        return;
      }
      Stream cpu;
      row.baseline_time_us = median_time_us(
          make_native_op(c, dtype, cpu), [] {}, timing_);
      return;
    }
    row.baseline = c.is_gemm() ? "cublas" : c.op == "add_relu" ? "cudnn" : "memcpy";
    if (!enabled_) {
      row.note = "--no-baseline";
    } else if (c.op == "add_relu") {
#if ENGINE_BENCH_GPU_BASELINES
      row.baseline_time_us = time_cudnn_add_relu(shape_numel(c.dims), stream_, timing_);
#else
      row.note = "built without cuDNN/cuBLAS";
#endif
    } else if (!c.is_gemm()) {
      row.baseline_time_us = device_copy_us(c.bytes, stream_, timing_);
    } else {
#if ENGINE_BENCH_GPU_BASELINES
      row.baseline_time_us = cublas_time_us(c, dtype);
#else
      (void)dtype;
      row.note = "built without cuDNN/cuBLAS";
#endif
    }
  }

 private:
#if ENGINE_BENCH_GPU_BASELINES
  // cuBLAS times the three passes of a shape at once; the fc layer's three rows share them.
  double cublas_time_us(const OpCase& c, DType dtype) {
    auto found = cublas_.find({c.dims, dtype});
    if (found == cublas_.end()) {
      const LinearPassTimes t =
          time_cublas_linear(c.dims[0], c.dims[1], c.dims[2], dtype, stream_, timing_);
      found = cublas_.emplace(std::make_pair(c.dims, dtype), t).first;
    }
    if (c.op == "linear_fwd") return found->second.forward_us;
    if (c.op == "linear_bwd_data") return found->second.backward_data_us;
    return found->second.backward_weight_us;
  }
  std::map<std::pair<std::vector<int64_t>, DType>, LinearPassTimes> cublas_;
#endif
  bool enabled_, gpu_, sim_;
  Stream& stream_;
  TimingOptions timing_;
  std::unique_ptr<TorchProcess> torch_;  // CPU only
};

}  // namespace

std::vector<Row> run_op_rows(const OpRowOptions& options, Stream& stream,
                             const TimingOptions& timing) {
  const std::vector<OpCase> cases = selected_cases(options);
  const bool gpu = stream.device().is_cuda();
  Baselines baselines(cases, options, stream, timing);
  std::vector<Row> rows;
  for (const OpCase& c : cases) {
    // On a GPU the GEMMs get a row per dtype, as the conv rows; every other op is timed in
    // f32, and the CPU runs f32 only.
    const bool per_dtype = gpu && c.is_gemm();
    for (DType dtype : per_dtype ? options.gemm_dtypes : std::vector<DType>{DType::f32}) {
      const std::string suffix = per_dtype ? " " + std::string(dtype_name(dtype)) : "";
      const std::function<void()> op = make_native_op(c, dtype, stream);
      // The baseline first: PyTorch's process is then idle, past its start-up, while ours run.
      Row row("kernels", "native", c.name + suffix, 0);
      baselines.attach(c, dtype, row);
      row.time_us = median_stream_time_us(op, stream, timing);
      if (c.is_gemm()) {
        row.gflops = c.flops / (row.time_us * 1e3);
      } else {
        row.gbps = c.bytes / (row.time_us * 1e3);
        row.bytes = static_cast<int64_t>(c.bytes);
      }
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace engine::bench
