#include <array>
#include <string>

#include "bench/ops/op_description.h"
#include "kernels/error.h"

namespace engine::op_registry {

// Each defined in its description file (descriptions/).
#define ENGINE_OP(name) const OpDescription& describe_##name();
#include "bench/ops/op_list.h"
#undef ENGINE_OP

namespace {

using Table = std::array<const OpDescription*, 0
#define ENGINE_OP(name) +1
#include "bench/ops/op_list.h"
#undef ENGINE_OP
                         >;

}  // namespace

void check_registry(std::span<const OpDescription* const> table) {
  for (size_t i = 0; i < table.size(); ++i) {
    const std::string entry(op_name(static_cast<OpId>(i)));
    if (table[i] == nullptr || table[i]->cases == nullptr)
      fail("op registry: op_list.h's entry '" + entry + "' has no description of its cases");
    if (static_cast<size_t>(table[i]->id) != i) {
      fail("op registry: op_list.h's entry '" + entry + "' is filed with the description of '" +
           std::string(op_name(table[i]->id)) + "'");
    }
  }
}

std::string OpCase::id() const {
  return std::string(op_name(op)) + "/" +
         (fp32_math == Fp32Math::tf32 ? "tf32" : std::string(dtype_name(dtype))) + "/" + name;
}

std::span<const OpDescription* const> registry() {
  // Made on first use, not at static initialization: a test binary lists its cases then.
  static const Table table = [] {
    Table t = {
#define ENGINE_OP(name) &describe_##name(),
#include "bench/ops/op_list.h"
#undef ENGINE_OP
    };
    check_registry(t);
    return t;
  }();
  return table;
}

const OpDescription& describe(OpId op) {
  return *registry()[static_cast<size_t>(op)];
}

std::string_view op_name(OpId op) {
  static constexpr std::string_view kNames[] = {
#define ENGINE_OP(name) #name,
#include "bench/ops/op_list.h"
#undef ENGINE_OP
  };
  return kNames[static_cast<size_t>(op)];
}

bool rows_per_dtype(const OpDescription& op, bool gpu) {
  return op.bench_dtypes == BenchDtypes::each ||
         (gpu && op.bench_dtypes == BenchDtypes::each_on_gpu);
}

std::vector<DType> bench_row_dtypes(const OpDescription& op, bool gpu,
                                    const std::vector<DType>& asked) {
  return rows_per_dtype(op, gpu) ? asked : std::vector<DType>{DType::f32};
}

std::vector<OpCase> all_cases(const ModelShapes& model, const std::vector<DType>& dtypes) {
  std::vector<OpCase> cases;
  for (const OpDescription* op : registry()) {
    for (DType dtype : dtypes) {
      for (OpCase& c : op->cases(model, dtype))
        cases.push_back(std::move(c));
    }
  }
  return cases;
}

}  // namespace engine::op_registry
