// The op registry itself (bench/ops/op_description.h): every op of op_list.h is described,
// in its place; a misfiled description is refused; case ids are unique (the harness names its
// tests by them); and every benchmark row has its traffic and a PyTorch baseline that
// compiles, and runs where PyTorch is installed, so a row cannot be added without what checks
// and times it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/ops/op_description.h"
#include "bench/torch_baseline.h"
#include "kernels/error.h"

namespace engine::op_registry {
namespace {

std::vector<OpCase> cases_of(const std::string& arch, int64_t batch, int64_t image_size) {
  return all_cases(model_shapes(arch, batch, image_size), {DType::f32, DType::bf16});
}

TEST(OpRegistry, EveryOpIsDescribedInItsPlace) {
  const auto table = registry();
  ASSERT_GT(table.size(), 0u);
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(table[i]->id), i) << op_name(static_cast<OpId>(i));
    EXPECT_NE(table[i]->cases, nullptr) << op_name(static_cast<OpId>(i));
  }
  EXPECT_EQ(op_name(OpId::relu), "relu");
  EXPECT_EQ(&describe(OpId::sgd), table[static_cast<size_t>(OpId::sgd)]);
}

TEST(OpRegistry, RefusesAMisfiledDescription) {
  std::vector<const OpDescription*> table(registry().begin(), registry().end());
  std::swap(table[static_cast<size_t>(OpId::relu)], table[static_cast<size_t>(OpId::add_relu)]);
  try {
    check_registry(table);
    FAIL() << "a table with relu and add_relu swapped was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'relu' is filed with the description of 'add_relu'"),
              std::string::npos)
        << e.what();
  }
}

TEST(OpRegistry, CaseIdsAreUnique) {
  for (const auto& [arch, size] : {std::pair{"resnet18", 32}, std::pair{"resnet50", 224}}) {
    std::set<std::string> ids;
    for (const OpCase& c : cases_of(arch, 2, size))
      EXPECT_TRUE(ids.insert(c.id()).second) << "two cases are named " << c.id();
    EXPECT_GT(ids.size(), 100u) << arch;
  }
}

// A bench row needs what bench_kernels reports (its bytes or flops), the shape PyTorch's
// make(dims) reads, and PyTorch's code for the CPU baseline.
TEST(OpRegistry, EveryBenchRowHasItsTrafficAndBaseline) {
  int rows = 0;
  for (const OpCase& c : cases_of("resnet50", 4, 224)) {
    if (!c.bench) continue;
    ++rows;
    EXPECT_TRUE(c.bytes > 0 || c.flops > 0) << c.id();
    EXPECT_FALSE(c.dims.empty()) << c.id();
    EXPECT_NE(describe(c.op).torch, nullptr) << c.id() << " has no PyTorch baseline";
    if (describe(c.op).step_total != nullptr) {
      EXPECT_GT(c.per_step, 0) << c.id() << " counts for nothing in its per-step total";
    }
  }
  EXPECT_GT(rows, 20);
}

// Every description's PyTorch code is valid Python that defines make(dims): compiled (not run:
// no PyTorch is needed) by the python3 that runs the baselines.
TEST(OpRegistry, TorchSourcesCompile) {
  for (const OpDescription* op : registry()) {
    if (op->torch == nullptr) continue;
    const std::string source = op->torch;
    EXPECT_NE(source.find("def make(dims):"), std::string::npos) << op_name(op->id);
    FILE* python =
        popen("python3 -c 'import sys; compile(sys.stdin.read(), \"description\", \"exec\")'", "w");
    ASSERT_NE(python, nullptr);
    std::fwrite(source.data(), 1, source.size(), python);
    EXPECT_EQ(pclose(python), 0) << op_name(op->id) << "'s PyTorch code:\n" << source;
  }
}

// Every description's PyTorch code runs: make(dims) on the op's first bench case of a small
// model in each dtype its CPU rows run in, through tools/bench_torch_ops.py as bench_kernels
// runs it, where the python that runs the baselines has torch.
TEST(OpRegistry, TorchSourcesRun) {
  const char* python = std::getenv("ENGINE_TORCH_PYTHON");
  const std::string check =
      std::string(python != nullptr && *python != '\0' ? python : "/usr/bin/python3") +
      " -c 'import torch' 2>/dev/null";
  if (std::system(check.c_str()) != 0) GTEST_SKIP() << "no PyTorch: " << check;
  // Nothing of ours is timed beside it: no pauses for spinning threads.
  bench::TorchProcess torch("bench_torch_ops.py", 1, 0.0, bench::SwitchPauses::none);
  const ModelShapes model = model_shapes("resnet18", 1, 32);
  int ran = 0;
  for (const OpDescription* op : registry()) {
    if (op->torch == nullptr) continue;
    for (DType dtype : bench_row_dtypes(*op, /*gpu=*/false, {DType::f32, DType::bf16})) {
      for (const OpCase& c : op->cases(model, dtype)) {
        if (!c.bench) continue;
        const std::map<std::string, double> times =
            torch.time_case(bench::torch_request_line(c, op->torch), 1);
        EXPECT_EQ(times.count(std::string(op_name(op->id))), 1u)
            << c.id() << ": " << torch.unavailable_reason();
        ++ran;
        break;
      }
    }
  }
  EXPECT_GT(ran, 15);
}

}  // namespace
}  // namespace engine::op_registry
