// What the emulator learns from the running executable's own ELF symbol table: where the
// static __shared__ variables are (see shared_memory.h) and the names of kernels.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace simt::detail {

struct MemoryRange {
  std::byte* begin;
  std::size_t size;
};

// The writable static locals of every function that declares a __shared__ variable, merged
// into contiguous ranges, with the calling thread's instances of the thread_local ones (the
// TSan build). Read once, at the first call; empty (with a warning on stderr) when the
// executable has no symbol table.
const std::vector<MemoryRange>& static_shared_ranges();
// Whether static_shared_ranges() could be read: false for a stripped executable (as
// scripts/pack-gpu-check ships them), where an address cannot be told to be shared memory.
bool static_shared_ranges_known();

// The demangled name of the function at `address`, from the symbol table or the dynamic
// linker; its address in hex when neither knows it.
std::string function_name(const void* address);

}  // namespace simt::detail
