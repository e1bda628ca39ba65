#include "bench/op_rows.h"

#include <functional>
#include <memory>
#include <utility>

#include "bench/ops/op_description.h"
#include "bench/torch_baseline.h"
#include "kernels/runtime.h"

namespace engine::bench {

namespace {

using op_registry::OpCase;
using op_registry::OpDescription;

// The bench rows of every op in the registry, in its order: the f32 rows, and on a GPU the
// GEMMs' rows in each dtype asked for, as the conv rows (every other op is timed in f32, and
// the CPU runs f32 only).
std::vector<OpCase> selected_cases(const OpRowOptions& options, bool gpu) {
  const op_registry::ModelShapes model =
      op_registry::model_shapes(options.arch, options.batch, options.image_size);
  std::vector<OpCase> cases;
  auto take = [&](std::vector<OpCase> from, bool gemms_only) {
    for (OpCase& c : from) {
      if (!c.bench || (gemms_only && !c.is_gemm())) continue;
      if (options.filter.empty() || c.name.find(options.filter) != std::string::npos)
        cases.push_back(std::move(c));
    }
  };
  for (const OpDescription* op : op_registry::registry()) {
    const std::vector<OpCase> f32 = op->cases(model, DType::f32);
    const bool gemm = !f32.empty() && f32.front().is_gemm();
    if (!gpu || !gemm) {
      take(f32, false);
      continue;
    }
    for (DType dtype : options.gemm_dtypes)
      take(op->cases(model, dtype), true);
  }
  return cases;
}

// The case as a tab-separated stdin line of tools/bench_torch_ops.py: name, op, dims..., and
// last the description's Python (its backslashes, tabs and newlines escaped).
std::string torch_request_line(const OpCase& c, const char* torch_source) {
  std::string line = c.name + "\t" + std::string(op_registry::op_name(c.op));
  for (int64_t d : c.dims) {
    line += '\t';  // appended apart: g++ 12 warns falsely (-Wrestrict) on "\t" + string
    line += std::to_string(d);
  }
  line += '\t';
  for (const char* p = torch_source; *p != '\0'; ++p) {
    if (*p == '\\') {
      line += "\\\\";
    } else if (*p == '\n') {
      line += "\\n";
    } else if (*p == '\t') {
      line += "\\t";
    } else {
      line += *p;
    }
  }
  return line;
}

// Each row's baseline, timed right before the row: PyTorch on the CPU (the description's
// Python); on a GPU the description's GPU baseline (a device copy of the same bytes unless it
// names cuDNN or cuBLAS); on the sim device, the CPU backend.
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

  void attach(const OpCase& c, Row& row) {
    const OpDescription& op = op_registry::describe(c.op);
    if (!gpu_) {
      row.baseline = "torch";
      if (op.torch == nullptr) {
        row.note = "no PyTorch baseline for this op";
        return;
      }
      const std::map<std::string, double> times =
          torch_->time_case(torch_request_line(c, op.torch), 1);
      const auto found = times.find(std::string(op_registry::op_name(c.op)));
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
      const op_registry::Prepared prepared = c.prepare(cpu, op_registry::Inputs::fast);
      row.baseline_time_us = median_time_us(
          prepared.call, [] {}, timing_);
      return;
    }
    row.baseline = op.gpu_baseline.name;
    if (!enabled_) {
      row.note = "--no-baseline";
      return;
    }
    const std::optional<double> time = op.gpu_baseline.time_us(c, stream_, timing_);
    if (time) {
      row.baseline_time_us = *time;
    } else {
      row.note = "built without cuDNN/cuBLAS";
    }
  }

 private:
  bool enabled_, gpu_, sim_;
  Stream& stream_;
  TimingOptions timing_;
  std::unique_ptr<TorchProcess> torch_;  // CPU only
};

}  // namespace

std::vector<Row> run_op_rows(const OpRowOptions& options, Stream& stream,
                             const TimingOptions& timing) {
  const bool gpu = stream.device().is_cuda();
  const std::vector<OpCase> cases = selected_cases(options, gpu);
  Baselines baselines(cases, options, stream, timing);
  std::vector<Row> rows;
  for (const OpCase& c : cases) {
    const std::string suffix = gpu && c.is_gemm() ? " " + std::string(dtype_name(c.dtype)) : "";
    const op_registry::Prepared prepared = c.prepare(stream, op_registry::Inputs::fast);
    // The baseline first: PyTorch's process is then idle, past its start-up, while ours run.
    Row row("kernels", "native", c.name + suffix, 0);
    baselines.attach(c, row);
    row.time_us = median_stream_time_us(prepared.call, stream, timing);
    if (c.is_gemm()) {
      row.gflops = c.flops / (row.time_us * 1e3);
    } else {
      row.gbps = c.bytes / (row.time_us * 1e3);
      row.bytes = static_cast<int64_t>(c.bytes);
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace engine::bench
