#include "kernels/cpu/isa.h"

namespace engine::cpu {

namespace {
bool portable_forced = false;
}  // namespace

bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

bool use_avx512() {
  return cpu_has_avx512() && !portable_forced;
}

void force_portable_kernels(bool on) {
  portable_forced = on;
}

}  // namespace engine::cpu
