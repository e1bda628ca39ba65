// An op's one description: everything about the op that the op harness (tests/ops), the
// benchmark (bench_kernels' op rows) and its baselines need, filled in the op's file under
// descriptions/ (as nccl-tests fills one struct per collective). The harness, the bench and
// the PyTorch baseline (tools/bench_torch_ops.py) loop over registry() and never name an op.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/ops/model_shapes.h"
#include "bench/ops/op_case.h"
#include "bench/timing.h"

namespace engine::op_registry {

using bench::TimingOptions;

// A GPU baseline's median time for a case, and what the row's note says of it (the algorithm
// cuDNN picked, say).
struct GpuBaselineTime {
  double time_us = 0;
  std::string note;
};

// What a bench row's call is held against on a GPU, timed on the same stream right before it.
struct GpuBaseline {
  const char* name;  // the row's baseline column: "memcpy", "cudnn", "cublas"
  // The baseline on the case, or nothing where this build lacks it (then the row notes that it
  // was built without cuDNN/cuBLAS).
  std::optional<GpuBaselineTime> (*time)(const OpCase&, Stream&, const TimingOptions&);
};

// A device copy moving the case's bytes: the row's ratio is then the fraction of copy
// bandwidth the op reaches (the memory-bound ops).
extern const GpuBaseline kCopyBaseline;

// The dtypes an op's bench rows run in, of those bench_kernels --dtype asks for.
enum class BenchDtypes {
  f32,          // f32 only, on every device
  each_on_gpu,  // each on a GPU, f32 on the CPU (the fc layer's GEMMs; the activation-sized
                // memory-bound ops, whose bytes a bf16 step moves in bf16)
  each,         // each on every device (the convolutions)
};

struct OpDescription {
  OpId id{};
  // The op's cases in `dtype` on the model's shapes; none where the op has no such dtype. The
  // harness runs them all; the bench the ones marked `bench`.
  std::vector<OpCase> (*cases)(const ModelShapes& model, DType dtype) = nullptr;
  // PyTorch's CPU baseline of a bench row: Python source that defines make(dims), returning
  // the callable to time, or a list of ways to do the same (memory layouts, say), of which the
  // fastest is kept. tools/bench_torch_ops.py runs it with torch, F = torch.nn.functional and
  // dtype (the case's: torch.float32 or torch.bfloat16) defined; null where no row has one.
  const char* torch = nullptr;
  GpuBaseline gpu_baseline = kCopyBaseline;
  BenchDtypes bench_dtypes = BenchDtypes::f32;
  // The per-step total its rows add up to, with those of every op naming the same total (the
  // three passes of the convolutions): "<arch> <step_total> <dtype> (x count)", each case
  // weighted by its per_step. Those ops' rows are timed case by case side by side (a layer's
  // passes together), each dtype's followed by its total. Null: no total.
  const char* step_total = nullptr;
};

// Every op of op_list.h, in its order.
std::span<const OpDescription* const> registry();
// Throws engine::Error naming the entry where a table's i-th description is not op i's (a
// description filed under another op's line), or has no cases.
void check_registry(std::span<const OpDescription* const> table);
const OpDescription& describe(OpId op);
// Its name in op_list.h: in case ids, and the op a PyTorch baseline line names.
std::string_view op_name(OpId op);

// Whether the op has a row per dtype on a GPU (or the CPU): its rows' names then end with it.
bool rows_per_dtype(const OpDescription& op, bool gpu);
// The dtypes of its bench rows there, of `asked` (in their order): `asked` or f32 alone.
std::vector<DType> bench_row_dtypes(const OpDescription& op, bool gpu,
                                    const std::vector<DType>& asked);

// The cases of every op on the model: each op's f32 cases, then its cases in the other
// dtypes it has, op by op.
std::vector<OpCase> all_cases(const ModelShapes& model, const std::vector<DType>& dtypes);

}  // namespace engine::op_registry
