#include "bench/op_rows.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "bench/ops/op_description.h"
#include "bench/torch_baseline.h"
#include "kernels/error.h"
#include "kernels/runtime.h"

namespace engine::bench {

namespace {

using op_registry::OpCase;
using op_registry::OpDescription;

// A row to measure (a case's), or a per-step total of earlier rows (their indices and weights).
struct PlannedRow {
  std::string name;
  std::optional<OpCase> c;
  std::vector<std::pair<size_t, int>> weighted_rows;
};

std::string dtype_suffix(DType dtype) {
  std::string suffix = " ";  // appended apart: g++ 12 warns falsely (-Wrestrict) on " " + string
  suffix += dtype_name(dtype);
  return suffix;
}

const std::string& subject(const OpCase& c) {
  return c.row_subject.empty() ? c.name : c.row_subject;
}

std::string row_name(const OpCase& c, const OpDescription& op, bool gpu) {
  std::string name = subject(c);
  if (!c.row_pass.empty()) name += " " + c.row_pass;
  if (op_registry::rows_per_dtype(op, gpu)) name += dtype_suffix(c.dtype);
  return name;
}

// The op's bench cases in `dtype` that the filter keeps.
std::vector<OpCase> bench_cases(const OpDescription& op, const op_registry::ModelShapes& model,
                                DType dtype, const std::string& filter) {
  std::vector<OpCase> cases;
  for (OpCase& c : op.cases(model, dtype)) {
    if (c.bench && (filter.empty() || subject(c).find(filter) != std::string::npos))
      cases.push_back(std::move(c));
  }
  return cases;
}

// The ops that add up to `op`'s per-step total, in the registry's order (`op` alone where it
// has none).
std::vector<const OpDescription*> total_group(const OpDescription& op) {
  if (op.step_total == nullptr) return {&op};
  std::vector<const OpDescription*> group;
  for (const OpDescription* other : op_registry::registry()) {
    if (other->step_total != nullptr && std::string_view(other->step_total) == op.step_total)
      group.push_back(other);
  }
  return group;
}

// Every row in table order: op by op in the registry's order, each in its dtypes; the ops of a
// per-step total together where the first of them is, case by case, each dtype's rows followed
// by their total.
std::vector<PlannedRow> plan_rows(const OpRowOptions& options, bool gpu) {
  const op_registry::ModelShapes model =
      op_registry::model_shapes(options.arch, options.batch, options.image_size);
  std::vector<PlannedRow> plan;
  std::set<std::string_view> planned_totals;
  for (const OpDescription* op : op_registry::registry()) {
    if (op->step_total != nullptr && !planned_totals.insert(op->step_total).second) continue;
    const std::vector<const OpDescription*> group = total_group(*op);
    for (DType dtype : op_registry::bench_row_dtypes(*op, gpu, options.dtypes)) {
      std::vector<std::vector<OpCase>> cases;
      for (const OpDescription* member : group) {
        cases.push_back(bench_cases(*member, model, dtype, options.filter));
        if (cases.back().size() != cases.front().size()) {
          fail("bench_kernels: the ops of the total '" + std::string(op->step_total) +
               "' have different numbers of bench cases in " + std::string(dtype_name(dtype)));
        }
      }
      const size_t first = plan.size();
      for (size_t i = 0; i < cases.front().size(); ++i) {
        for (size_t m = 0; m < group.size(); ++m)
          plan.push_back({row_name(cases[m][i], *group[m], gpu), std::move(cases[m][i]), {}});
      }
      if (op->step_total == nullptr || plan.size() == first) continue;
      PlannedRow total{
          model.arch + " " + op->step_total + dtype_suffix(dtype) + " (x count)", std::nullopt, {}};
      for (size_t row = first; row < plan.size(); ++row)
        total.weighted_rows.emplace_back(row, plan[row].c->per_step);
      plan.push_back(std::move(total));
    }
  }
  return plan;
}

// A total's time, and its baseline's where every row it adds up has one.
Row total_row(const PlannedRow& total, const std::vector<Row>& rows) {
  Row row("kernels", "native", total.name, 0);
  row.baseline = rows[total.weighted_rows.front().first].baseline;
  double baseline_us = 0;
  bool complete = true;
  for (const auto& [index, weight] : total.weighted_rows) {
    row.time_us += weight * rows[index].time_us;
    if (rows[index].baseline_time_us)
      baseline_us += weight * *rows[index].baseline_time_us;
    else
      complete = false;
  }
  if (complete && !row.baseline.empty()) row.baseline_time_us = baseline_us;
  return row;
}

// Each row's baseline, timed right before the row: PyTorch on the CPU (the description's
// Python); on a GPU the description's GPU baseline (a device copy of the same bytes unless it
// names cuDNN or cuBLAS); on the sim device, the CPU backend.
class Baselines {
 public:
  Baselines(bool any_case, const OpRowOptions& options, Stream& stream, const TimingOptions& timing)
      : enabled_(options.baseline),
        gpu_(stream.device().is_cuda()),
        sim_(gpu_ && cuda_is_sim_device()),
        stream_(stream),
        timing_(timing),
        torch_(!options.baseline ? std::make_unique<TorchProcess>("--no-baseline")
               : gpu_ || !any_case
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
    const std::optional<op_registry::GpuBaselineTime> time =
        op.gpu_baseline.time(c, stream_, timing_);
    if (time) {
      row.baseline_time_us = time->time_us;
      row.note = time->note;
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

Row measure(const OpCase& c, const std::string& name, Baselines& baselines, Stream& stream,
            const TimingOptions& timing) {
  const op_registry::Prepared prepared = c.prepare(stream, op_registry::Inputs::fast);
  // The baseline first: PyTorch's process is then idle, past its start-up, while ours run.
  Row row("kernels", "native", name, 0);
  baselines.attach(c, row);
  row.time_us = median_stream_time_us(prepared.call, stream, timing);
  if (c.is_gemm()) {
    row.gflops = c.flops / (row.time_us * 1e3);
  } else {
    row.gbps = c.bytes / (row.time_us * 1e3);
    row.bytes = static_cast<int64_t>(c.bytes);
  }
  return row;
}

std::vector<Row> run_round(const std::vector<PlannedRow>& plan, const OpRowOptions& options,
                           bool first_round, Stream& stream, const TimingOptions& timing) {
  bool any_case = false;
  for (const PlannedRow& planned : plan)
    any_case = any_case || planned.c.has_value();
  Baselines baselines(any_case, options, stream, timing);
  std::vector<Row> rows;
  for (const PlannedRow& planned : plan) {
    rows.push_back(planned.c ? measure(*planned.c, planned.name, baselines, stream, timing)
                             : total_row(planned, rows));
    if (first_round && options.measured) options.measured(rows);
  }
  return rows;
}

}  // namespace

std::vector<Row> run_op_rows(const OpRowOptions& options, Stream& stream,
                             const TimingOptions& timing) {
  const std::vector<PlannedRow> plan = plan_rows(options, stream.device().is_cuda());
  std::vector<std::vector<Row>> rounds;
  for (int round = 0; round < std::max(options.rounds, 1); ++round)
    rounds.push_back(run_round(plan, options, round == 0, stream, timing));
  std::vector<Row> rows = fastest_of_rounds(rounds);
  // The totals of each row's fastest times.
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!plan[i].c) rows[i] = total_row(plan[i], rows);
  }
  return rows;
}

}  // namespace engine::bench
