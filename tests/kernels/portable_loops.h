// Makes the CPU ops take their portable loops (kernels/cpu/isa.h) while in scope, or keep
// the default choice with on = false, and restores the default when the scope ends, whatever
// happens in it: on AVX-512 machines that is how the tests reach the loops that CPUs without
// it run.
#pragma once

#include "kernels/cpu/isa.h"

namespace engine::testing {

struct PortableLoops {
  explicit PortableLoops(bool on = true) { cpu::force_portable_kernels(on); }
  ~PortableLoops() { cpu::force_portable_kernels(false); }
  PortableLoops(const PortableLoops&) = delete;
  PortableLoops& operator=(const PortableLoops&) = delete;
};

}  // namespace engine::testing
