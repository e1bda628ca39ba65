// The op harness's cases (tests/ops/test_op_harness.cpp): every case of every op in the op
// registry (bench/ops/op_description.h) on the model's own layer shapes, in f32 and bf16. A
// case makes its inputs on the host from fixed seeds, so every device sees the same values;
// the harness runs it on each device present and compares with the CPU, checks its gradients
// by finite differences, and times it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/ops/op_description.h"

namespace engine::ops_harness {

using op_registry::Differentiable;
using op_registry::OpCase;
using op_registry::Output;
using op_registry::Prepared;

struct CaseConfig {
  std::string arch = "resnet18";
  int64_t image_size = 32;
  int64_t batch = 2;
};

// ENGINE_OPS_ARCH, ENGINE_OPS_IMAGE_SIZE and ENGINE_OPS_BATCH override the defaults.
CaseConfig case_config_from_env();

std::vector<OpCase> all_op_cases(const CaseConfig& config);

}  // namespace engine::ops_harness
