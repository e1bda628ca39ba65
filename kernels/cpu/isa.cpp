#include "kernels/cpu/isa.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace engine::cpu {

namespace {
// ENGINE_CPU_VECTOR (baseline, avx2 or avx512) caps the vector loops from the start, for
// benchmarks that compare the levels in one build (an AVX-512 machine standing in for an
// AVX2-only one); unset or unknown, no cap.
VectorIsa vector_isa_cap_from_environment() {
  const char* text = std::getenv("ENGINE_CPU_VECTOR");
  if (text == nullptr) return VectorIsa::kAvx512;
  if (std::strcmp(text, "baseline") == 0) return VectorIsa::kBaseline;
  if (std::strcmp(text, "avx2") == 0) return VectorIsa::kAvx2;
  if (std::strcmp(text, "avx512") != 0) {
    std::fprintf(stderr, "ENGINE_CPU_VECTOR=%s is not baseline, avx2 or avx512: ignored\n", text);
  }
  return VectorIsa::kAvx512;
}
VectorIsa vector_isa_cap = vector_isa_cap_from_environment();

// ENGINE_CPU_BF16 (amx, avx512-bf16 or widened-fp32) picks the way bf16 is multiplied, for
// benchmarks that compare the ways in one build; unset or unknown, the default.
std::optional<Bf16Products> bf16_requested_from_environment() {
  const char* text = std::getenv("ENGINE_CPU_BF16");
  if (text == nullptr) return std::nullopt;
  for (Bf16Products way : {Bf16Products::kAmx, Bf16Products::kAvx512Bf16, Bf16Products::kWidened}) {
    if (std::strcmp(text, bf16_products_name(way)) == 0) return way;
  }
  std::fprintf(stderr, "ENGINE_CPU_BF16=%s is not amx, avx512-bf16 or widened-fp32: ignored\n",
               text);
  return std::nullopt;
}
std::optional<Bf16Products> bf16_requested = bf16_requested_from_environment();

// CPUID leaf 7, sub-leaf `sub`: {eax, ebx, ecx, edx}, zeros where the leaf is absent.
struct Leaf7 {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};
Leaf7 cpuid_leaf7(unsigned sub) {
  Leaf7 leaf;
  if (__get_cpuid_max(0, nullptr) < 7) return leaf;
  __cpuid_count(7, sub, leaf.eax, leaf.ebx, leaf.ecx, leaf.edx);
  return leaf;
}

// Linux keeps AMX's 8 KiB of tile data out of a process's signal frames and context switches
// until the process asks for it; without the grant the first tile instruction faults.
bool linux_grants_amx_tile_data() {
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtileData = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
}
}  // namespace

bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

bool cpu_has_avx512_bf16() {
  // CPUID.(7, 1):EAX bit 5 is AVX512_BF16; avx512bw for the byte/word shuffles of the packing.
  static const bool has = cpu_has_avx512() && __builtin_cpu_supports("avx512bw") &&
                          (cpuid_leaf7(1).eax & (1u << 5)) != 0;
  return has;
}

bool cpu_has_amx_bf16() {
  // CPUID.(7, 0):EDX bit 22 is AMX-BF16, bit 24 AMX-TILE.
  static const bool has = [] {
    const unsigned edx = cpuid_leaf7(0).edx;
    const bool amx = (edx & (1u << 22)) != 0 && (edx & (1u << 24)) != 0;
    return amx && cpu_has_avx512_bf16() && linux_grants_amx_tile_data();
  }();
  return has;
}

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

VectorIsa vector_isa() {
  static const VectorIsa widest = cpu_has_avx512() ? VectorIsa::kAvx512
                                  : cpu_has_avx2() ? VectorIsa::kAvx2
                                                   : VectorIsa::kBaseline;
  return std::min(widest, vector_isa_cap);
}

void cap_vector_isa(VectorIsa widest) {
  vector_isa_cap = widest;
}

bool use_avx512() {
  return vector_isa() == VectorIsa::kAvx512;
}

void force_portable_kernels(bool on) {
  cap_vector_isa(on ? VectorIsa::kBaseline : VectorIsa::kAvx512);
}

Bf16Products choose_bf16_products(std::optional<Bf16Products> requested,
                                  const Bf16Hardware& hardware) {
  const bool amx = hardware.avx512 && hardware.amx_bf16;
  const bool avx512_bf16 = hardware.avx512 && hardware.avx512_bf16;
  if (!requested) {
    if (amx) return Bf16Products::kAmx;
    return avx512_bf16 && hardware.amd ? Bf16Products::kAvx512Bf16 : Bf16Products::kWidened;
  }
  if (*requested == Bf16Products::kAmx && amx) return Bf16Products::kAmx;
  if (*requested == Bf16Products::kAvx512Bf16 && avx512_bf16) return Bf16Products::kAvx512Bf16;
  return Bf16Products::kWidened;
}

Bf16Products bf16_products() {
  static const bool amd = __builtin_cpu_is("amd");
  const bool avx512 = use_avx512();
  return choose_bf16_products(bf16_requested,
                              Bf16Hardware{.avx512 = avx512,
                                           .avx512_bf16 = avx512 && cpu_has_avx512_bf16(),
                                           .amx_bf16 = avx512 && cpu_has_amx_bf16(),
                                           .amd = amd});
}

void force_bf16_products(std::optional<Bf16Products> way) {
  bf16_requested = way;
}

const char* bf16_products_name(Bf16Products way) {
  switch (way) {
    case Bf16Products::kAmx:
      return "amx";
    case Bf16Products::kAvx512Bf16:
      return "avx512-bf16";
    case Bf16Products::kWidened:
      break;
  }
  return "widened-fp32";
}

}  // namespace engine::cpu
