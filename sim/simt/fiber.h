// Fibers: user-space execution contexts, one per CUDA thread, switched cooperatively.
//
// On x86-64 the switch is hand-written (the callee-saved general registers, no system call;
// the floating-point control words stay the OS thread's: see fp_control); elsewhere, or with
// -fcf-protection (CET shadow stacks cannot follow a stack switch; CMakeLists.txt compiles the
// library without it), or with SIMT_FORCE_UCONTEXT, it is ucontext's swapcontext, which also saves
// the signal mask with a system call on every switch. All library sources must agree on the choice
// (it changes Fiber's layout). Every switch is annotated for ASan
// (__sanitizer_start/finish_switch_fiber) and TSan (__tsan_switch_to_fiber with the no-sync
// flag: switching orders no memory, only barriers do).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if !defined(__x86_64__) || defined(__CET__) || defined(SIMT_FORCE_UCONTEXT)
#define SIMT_UCONTEXT 1
#include <ucontext.h>
#endif

namespace simt::detail {

struct Fiber;

// What a fiber runs; it returns the fiber to continue with once it has finished for good.
using FiberMain = Fiber* (*)(void* arg);

struct Fiber {
  void* sp = nullptr;  // saved stack pointer; first member: the assembly reads it at offset 0
#if SIMT_UCONTEXT
  ucontext_t context;
#endif
  std::byte* stack_lo = nullptr;  // lowest usable address of its stack
  std::size_t stack_size = 0;
  void* tsan_fiber = nullptr;
  void* asan_fake_stack = nullptr;
};

// Describes the calling OS thread as a fiber that others can switch back to.
void fiber_adopt_thread(Fiber& fiber);

// Makes `fiber` run main(arg) on its stack when it is next switched to. For TSan a Fiber
// keeps one context for its whole life, renamed `name` here. Its previous run must have
// ended (or never started): nothing on its stack survives.
void fiber_prepare(Fiber& fiber, FiberMain main, void* arg, const char* name);

// Saves the running fiber in `from` and continues `to`; returns when something switches back.
void fiber_switch(Fiber& from, Fiber& to);

// The floating-point control words (x86-64: MXCSR's rounding, flush-to-zero and exception-mask
// bits, not its sticky flags; the x87 control word). The hand-written switch leaves them alone,
// so a thread that changed them would change them for every fiber after it: the scheduler
// compares them around each block and fails the block that did (CUDA code has no rounding
// mode to set; device_math.h relies on the default one).
struct FpControl {
  std::uint32_t mxcsr = 0;
  std::uint16_t x87 = 0;
  bool operator==(const FpControl&) const = default;
};
inline constexpr std::uint32_t kMxcsrControlBits = 0xffc0;
FpControl fp_control();
void set_fp_control(const FpControl& control);

// Fiber stacks: mmap'ed with a guard page below, kept for reuse by later blocks and launches.
class StackPool {
 public:
  static constexpr std::size_t kStackBytes = 256 * 1024;  // room for ASan/TSan frames
  // Stack tops coloured: stack i starts (i mod 1024) cache lines below its mapping's end. The
  // mappings are a page-multiple apart, so uncoloured tops, where a switch reads the saved
  // registers and the kernel's frame lives, would share their cache sets: 256 threads' hot
  // lines in 32 of a 1 MiB L2's 2048 sets, missing it on every switch. Colouring took 15% off
  // an emulated bf16 resnet18 step (3.19 -> 2.72 s, AMD EPYC).
  static constexpr std::size_t kColourBytes = 1024 * 64;
  static constexpr std::size_t colour_offset(std::size_t index) { return index % 1024 * 64; }

  StackPool() = default;
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool();

  // Gives `fiber` the stack number `index`, allocating stacks up to it when needed.
  void assign(std::size_t index, Fiber& fiber);

 private:
  struct Mapping {
    std::byte* base;
    std::size_t bytes;
  };
  std::vector<Mapping> stacks_;
};

}  // namespace simt::detail
