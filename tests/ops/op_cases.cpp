#include "op_cases.h"

#include <cstdlib>

namespace engine::ops_harness {

CaseConfig case_config_from_env() {
  CaseConfig config;
  if (const char* arch = std::getenv("ENGINE_OPS_ARCH")) config.arch = arch;
  if (const char* size = std::getenv("ENGINE_OPS_IMAGE_SIZE")) config.image_size = std::atoll(size);
  if (const char* batch = std::getenv("ENGINE_OPS_BATCH")) config.batch = std::atoll(batch);
  return config;
}

std::vector<OpCase> all_op_cases(const CaseConfig& config) {
  return op_registry::all_cases(
      op_registry::model_shapes(config.arch, config.batch, config.image_size),
      {DType::f32, DType::bf16});
}

}  // namespace engine::ops_harness
