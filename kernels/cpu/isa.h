// Which vector instruction set the CPU kernels use. The library is built for baseline x86-64
// so that one binary runs anywhere; the hot loops (GEMM, BatchNorm) also have AVX-512 versions
// that are chosen at run time when the CPU has AVX-512F, and bf16 products have kernels for
// AVX512_BF16 (vdpbf16ps) and Intel AMX (tdpbf16ps), chosen per CPU (choose_bf16_products).
#pragma once

#include <optional>

namespace engine::cpu {

// The CPU supports AVX-512F.
bool cpu_has_avx512();

// The CPU supports AVX512_BF16 (with AVX512F and AVX512BW, which every such CPU has).
bool cpu_has_avx512_bf16();

// The CPU supports AMX-BF16 tiles and Linux granted this process their state
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA), asked once).
bool cpu_has_amx_bf16();

// The CPU supports AVX2 and FMA (every x86-64 CPU since 2013-2015; AMD EPYC VMs here expose
// no more).
bool cpu_has_avx2();

// The widest vector loops the CPU ops take: the widest the CPU has, capped by
// cap_vector_isa() (tests use the cap to check every level's loops on one machine).
enum class VectorIsa { kBaseline, kAvx2, kAvx512 };
VectorIsa vector_isa();

// Caps vector_isa() (kAvx512: no cap; ENGINE_CPU_VECTOR=baseline|avx2|avx512 sets it at
// start). Not thread-safe: call between ops.
void cap_vector_isa(VectorIsa widest);

// Whether the CPU ops take their AVX-512 paths: vector_isa() == kAvx512.
bool use_avx512();

// cap_vector_isa(kBaseline) when on, else no cap: the portable loops.
void force_portable_kernels(bool on);

// How the CPU multiplies bf16 operands (convolutions and linear layers with bf16 tensors).
enum class Bf16Products {
  kWidened,     // widened to fp32 and multiplied by the fp32 GEMM (any CPU)
  kAvx512Bf16,  // vdpbf16ps: pairs of bf16 products summed into fp32 lanes
  kAmx,         // AMX tiles: tdpbf16ps, 16 x 16 fp32 results of 16 x 32 by 32 x 16 bf16
};

// What decides the way bf16 is multiplied on this CPU.
struct Bf16Hardware {
  bool avx512 = false;       // use_avx512(): false also when the portable loops are forced
  bool avx512_bf16 = false;  // cpu_has_avx512_bf16()
  bool amx_bf16 = false;     // cpu_has_amx_bf16()
  bool amd = false;          // an AMD CPU (Zen 4 and later have AVX512_BF16 but no AMX)
};

// The way for `hardware`: the requested way where the hardware has it, else kWidened; with
// nothing requested, kAmx where present, else kAvx512Bf16 on AMD CPUs, else kWidened.
// vdpbf16ps does twice the work of an fp32 FMA per instruction; Zen 4 issues both at the same
// rate (IREE measured its bf16 matmul kernel at 2x its fp32 one there, iree-org/iree#15089),
// while Intel's cores issue fp32 FMAs on two ports and vdpbf16ps on one: on the Intel Xeon our
// kernel ran the resnet18 step at 0.86x of the widened GEMM's
// (bench/results/step-cpu-resnet18-64px-b32-bf16-ways-intel-xeon.txt).
Bf16Products choose_bf16_products(std::optional<Bf16Products> requested,
                                  const Bf16Hardware& hardware);

// choose_bf16_products() for this CPU and the way forced (or named by ENGINE_CPU_BF16).
Bf16Products bf16_products();

// Forces one way (tests and benchmarks check each on one machine; ENGINE_CPU_BF16 sets it at
// start); a way the CPU lacks falls back to kWidened; nothing restores the default. Not
// thread-safe: call between ops.
void force_bf16_products(std::optional<Bf16Products> way);

const char* bf16_products_name(Bf16Products way);

}  // namespace engine::cpu
