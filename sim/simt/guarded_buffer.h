// Emulated device memory with guard zones: the host allocation a test hands to kernels under
// simt::launch, framed before and after by canary bytes. Every launch checks the guards of
// every live buffer when it finishes and fails (std::runtime_error) naming the buffer, the
// byte offsets written and the kernel: an overrun that stays inside the heap block, where
// AddressSanitizer sees nothing, still fails the test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace simt {

namespace detail {
struct GuardedAllocation;

// The guards of every live GuardedBuffer, checked: "" when all are intact, else one line per
// buffer overwritten, naming it and the byte offsets. Re-arms the guards it reports, so each
// write is reported once. simt::launch calls it after every kernel and throws what it says.
std::string guard_violations();
}  // namespace detail

class GuardedBuffer {
 public:
  // A multiple of 16 and the allocation's alignment: data() keeps cudaMalloc's 16-byte vector
  // alignment unless misalign_bytes moves it.
  static constexpr std::size_t kGuardBytes = 64;

  // `bytes` bytes at data() = a 64-byte aligned address + misalign_bytes; the misalign_bytes
  // before it belong to the leading guard. `name` says in failures which buffer was hit.
  GuardedBuffer(std::size_t bytes, std::size_t misalign_bytes, std::string name);
  ~GuardedBuffer();
  GuardedBuffer(GuardedBuffer&&) noexcept;
  GuardedBuffer& operator=(GuardedBuffer&&) noexcept;

  std::byte* data() const;
  std::size_t size() const;
  const std::string& name() const;
  // This buffer's canary, repeated over its guards: a quiet NaN as bf16 and as f32 (so a
  // kernel that reads a guard computes NaN) with a payload that differs between consecutively
  // created buffers, so copying one buffer's guard into another's shows too.
  std::uint16_t canary() const;

 private:
  std::unique_ptr<detail::GuardedAllocation> allocation_;  // its address is what is registered
};

}  // namespace simt
