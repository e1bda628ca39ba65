#include "sim/simt/fiber.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "sim/simt/sanitizers.h"

namespace simt::detail {
namespace {

// The OS thread's own fiber, and the fiber being left by the switch in progress: ASan reports
// the bounds of the stack a switch came from, which keeps the host stack's bounds exact.
Fiber* g_host = nullptr;
Fiber* g_leaving = nullptr;

// `from` is null when the running fiber has finished for good (ASan then frees its fake stack).
SIMT_NO_ASAN void start_switch(Fiber* from, Fiber& to) {
  g_leaving = from;
#if SIMT_HAS_ASAN
  __sanitizer_start_switch_fiber(from != nullptr ? &from->asan_fake_stack : nullptr, to.stack_lo,
                                 to.stack_size);
#endif
#if SIMT_HAS_TSAN
  __tsan_switch_to_fiber(to.tsan_fiber, __tsan_switch_to_fiber_no_sync);
#endif
  (void)to;
}

SIMT_NO_ASAN void finish_switch(void* fake_stack) {
#if SIMT_HAS_ASAN
  const void* lo = nullptr;
  std::size_t size = 0;
  __sanitizer_finish_switch_fiber(fake_stack, &lo, &size);
  if (g_leaving != nullptr && g_leaving == g_host) {
    g_host->stack_lo = static_cast<std::byte*>(const_cast<void*>(lo));
    g_host->stack_size = size;
  }
#endif
  (void)fake_stack;
}

}  // namespace
}  // namespace simt::detail

// First code a prepared fiber runs (called from the trampoline or ucontext entry below): runs
// main, then announces the final switch and returns the fiber to continue with. Nothing of
// this fiber's stack is live after it returns, so the stack can be reused as is.
extern "C" __attribute__((used, visibility("hidden"))) SIMT_NO_ASAN simt::detail::Fiber*
simt_fiber_run(simt::detail::FiberMain main, void* arg) {
  simt::detail::finish_switch(nullptr);
  simt::detail::Fiber* next = main(arg);
  simt::detail::start_switch(nullptr, *next);
  return next;
}

#if !SIMT_UCONTEXT
// simt_switch_stack(&from->sp, to->sp): pushes the callee-saved registers, stores the stack
// pointer, loads the other one and pops its registers. A new fiber's stack is prepared to
// "return" into simt_fiber_trampoline, which calls simt_fiber_run(r12, r13) and then resumes
// the fiber it returns without saving anything. The floating-point control words (MXCSR, the
// x87 control word) are not switched: every fiber of an OS thread runs with that thread's,
// and the scheduler refuses a block that changes them (fp_control below). Leaving out ldmxcsr
// and fldcw, which serialize the pipeline, took 2% off an emulated bf16 resnet18 step (AMD
// EPYC); what the switch costs beyond that is its first read of the other stack (fiber.h).
extern "C" void simt_switch_stack(void** save_sp, void* resume_sp);
extern "C" __attribute__((visibility("hidden"))) void simt_fiber_trampoline();
asm(R"(
  .text
  .p2align 4
  .globl simt_switch_stack
  .hidden simt_switch_stack
  .type simt_switch_stack, @function
simt_switch_stack:
  .cfi_startproc
  pushq %rbp
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %rbp, 0
  pushq %rbx
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %rbx, 0
  pushq %r12
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r12, 0
  pushq %r13
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r13, 0
  pushq %r14
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r14, 0
  pushq %r15
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r15, 0
  movq %rsp, (%rdi)
  movq %rsi, %rsp
.Lsimt_resume_stack:
  popq %r15
  .cfi_adjust_cfa_offset -8
  popq %r14
  .cfi_adjust_cfa_offset -8
  popq %r13
  .cfi_adjust_cfa_offset -8
  popq %r12
  .cfi_adjust_cfa_offset -8
  popq %rbx
  .cfi_adjust_cfa_offset -8
  popq %rbp
  .cfi_adjust_cfa_offset -8
  ret
  .cfi_endproc
  .size simt_switch_stack, .-simt_switch_stack

  .p2align 4
  .globl simt_fiber_trampoline
  .hidden simt_fiber_trampoline
  .type simt_fiber_trampoline, @function
simt_fiber_trampoline:
  .cfi_startproc
  .cfi_undefined %rip
  movq %r12, %rdi
  movq %r13, %rsi
  call simt_fiber_run@PLT
  movq (%rax), %rsp
  jmp .Lsimt_resume_stack
  .cfi_endproc
  .size simt_fiber_trampoline, .-simt_fiber_trampoline
)");
#else
namespace {
// makecontext passes int arguments: pointers travel as two halves.
void ucontext_entry(unsigned main_hi, unsigned main_lo, unsigned arg_hi, unsigned arg_lo) {
  const auto join = [](unsigned hi, unsigned lo) {
    return (static_cast<std::uintptr_t>(hi) << 32) | lo;
  };
  auto main = reinterpret_cast<simt::detail::FiberMain>(join(main_hi, main_lo));
  simt::detail::Fiber* next = simt_fiber_run(main, reinterpret_cast<void*>(join(arg_hi, arg_lo)));
  setcontext(&next->context);
}
}  // namespace
#endif

namespace simt::detail {

void fiber_adopt_thread(Fiber& fiber) {
  g_host = &fiber;
#if SIMT_HAS_TSAN
  fiber.tsan_fiber = __tsan_get_current_fiber();
#endif
#if SIMT_HAS_ASAN
  // A first estimate; the first switch back from a fiber reports ASan's exact bounds.
  pthread_attr_t attributes;
  if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
    void* lo = nullptr;
    std::size_t size = 0;
    pthread_attr_getstack(&attributes, &lo, &size);
    pthread_attr_destroy(&attributes);
    fiber.stack_lo = static_cast<std::byte*>(lo);
    fiber.stack_size = size;
  }
#endif
}

void fiber_prepare(Fiber& fiber, FiberMain main, void* arg, const char* name) {
#if SIMT_HAS_TSAN
  // Created once and reused: a TSan fiber costs milliseconds of mmap/madvise to create and
  // destroy, which a fresh one per CUDA thread per block would pay thousands of times.
  if (fiber.tsan_fiber == nullptr) fiber.tsan_fiber = __tsan_create_fiber(0);
  __tsan_set_fiber_name(fiber.tsan_fiber, name);
#endif
  (void)name;
  fiber.asan_fake_stack = nullptr;
#if SIMT_UCONTEXT
  getcontext(&fiber.context);
  fiber.context.uc_stack.ss_sp = fiber.stack_lo;
  fiber.context.uc_stack.ss_size = fiber.stack_size;
  fiber.context.uc_link = nullptr;
  const auto m = reinterpret_cast<std::uintptr_t>(main);
  const auto a = reinterpret_cast<std::uintptr_t>(arg);
  makecontext(&fiber.context, reinterpret_cast<void (*)()>(&ucontext_entry), 4,
              static_cast<unsigned>(m >> 32), static_cast<unsigned>(m),
              static_cast<unsigned>(a >> 32), static_cast<unsigned>(a));
#else
  // The frame simt_switch_stack pops: r15, r14, r13 = arg, r12 = main, rbx, rbp = 0 (ends
  // frame-pointer walks), return address; the trampoline then calls with a 16-byte aligned
  // stack (top - 2).
  auto* top = reinterpret_cast<std::uint64_t*>(fiber.stack_lo + fiber.stack_size);
  std::uint64_t* frame = top - 9;
  frame[0] = 0;
  frame[1] = 0;
  frame[2] = reinterpret_cast<std::uint64_t>(arg);
  frame[3] = reinterpret_cast<std::uint64_t>(main);
  frame[4] = 0;
  frame[5] = 0;
  frame[6] = reinterpret_cast<std::uint64_t>(&simt_fiber_trampoline);
  fiber.sp = frame;
#endif
}

FpControl fp_control() {
  FpControl control;
#if defined(__x86_64__)
  asm volatile("stmxcsr %0" : "=m"(control.mxcsr));
  asm volatile("fnstcw %0" : "=m"(control.x87));
  control.mxcsr &= kMxcsrControlBits;
#endif
  return control;
}

void set_fp_control(const FpControl& control) {
#if defined(__x86_64__)
  std::uint32_t mxcsr = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  mxcsr = (mxcsr & ~kMxcsrControlBits) | control.mxcsr;
  asm volatile("ldmxcsr %0" : : "m"(mxcsr));
  asm volatile("fldcw %0" : : "m"(control.x87));
#else
  (void)control;
#endif
}

void fiber_switch(Fiber& from, Fiber& to) {
  start_switch(&from, to);
#if SIMT_UCONTEXT
  swapcontext(&from.context, &to.context);
#else
  simt_switch_stack(&from.sp, to.sp);
#endif
  finish_switch(from.asan_fake_stack);
}

StackPool::~StackPool() {
  for (const Mapping& m : stacks_)
    munmap(m.base, m.bytes);
}

void StackPool::assign(std::size_t index, Fiber& fiber) {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  while (stacks_.size() <= index) {
    const std::size_t bytes = kStackBytes + kColourBytes + page;
    void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "simt: mmap");
    // The guard page turns a stack overflow into a segfault instead of silent corruption.
    if (mprotect(base, page, PROT_NONE) != 0) {
      munmap(base, bytes);
      throw std::system_error(errno, std::generic_category(), "simt: mprotect");
    }
    stacks_.push_back({static_cast<std::byte*>(base), bytes});
  }
  fiber.stack_lo = stacks_[index].base + page;
  fiber.stack_size = kStackBytes + kColourBytes - colour_offset(index);
}

}  // namespace simt::detail
