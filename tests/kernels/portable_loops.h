// Makes the CPU ops take their portable loops (kernels/cpu/isa.h) while in scope, or keep
// the default choice with on = false, and restores the default when the scope ends, whatever
// happens in it: on AVX-512 machines that is how the tests reach the loops that CPUs without
// it run.
#pragma once

#include <optional>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/tap_classes.h"

namespace engine::testing {

struct PortableLoops {
  explicit PortableLoops(bool on = true) { cpu::force_portable_kernels(on); }
  ~PortableLoops() { cpu::force_portable_kernels(false); }
  PortableLoops(const PortableLoops&) = delete;
  PortableLoops& operator=(const PortableLoops&) = delete;
};

// Caps the CPU ops' vector loops at `widest` (kernels/cpu/isa.h) while in scope, and removes
// the cap when the scope ends: how the tests reach the AVX2 loops on an AVX-512 machine.
struct CappedVectorIsa {
  explicit CappedVectorIsa(cpu::VectorIsa widest) { cpu::cap_vector_isa(widest); }
  ~CappedVectorIsa() { cpu::cap_vector_isa(cpu::VectorIsa::kAvx512); }
  CappedVectorIsa(const CappedVectorIsa&) = delete;
  CappedVectorIsa& operator=(const CappedVectorIsa&) = delete;
};

// Makes the CPU's bf16 products take `way` (kernels/cpu/isa.h: a way the CPU lacks falls
// back) while in scope, and restores the default when the scope ends.
struct ForcedBf16Products {
  explicit ForcedBf16Products(cpu::Bf16Products way) { cpu::force_bf16_products(way); }
  ~ForcedBf16Products() { cpu::force_bf16_products(std::nullopt); }
  ForcedBf16Products(const ForcedBf16Products&) = delete;
  ForcedBf16Products& operator=(const ForcedBf16Products&) = delete;
};

// Makes the convolutions that can skip the padding's zeros (kernels/cpu/tap_classes.h: the
// portable passes' tap classes, the bf16 filter gradient's pixel runs) skip them (on) or
// multiply im2col's full rows (off) for every shape while in scope, and restores the estimate's
// choice when the scope ends.
struct ForcedTapClasses {
  explicit ForcedTapClasses(std::optional<bool> on) { cpu::force_tap_classes(on); }
  ~ForcedTapClasses() { cpu::force_tap_classes(std::nullopt); }
  ForcedTapClasses(const ForcedTapClasses&) = delete;
  ForcedTapClasses& operator=(const ForcedTapClasses&) = delete;
};

}  // namespace engine::testing
