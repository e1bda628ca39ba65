# ENGINE_EMULATED_KERNEL_OPTIONS: compile options for CUDA kernels compiled by g++ (the SIMT
# emulator's tests and the sim device's CUDA backend).
#
# The fp32 GEMM's inner loop is 64 fmaf a step per thread. Compiled for baseline x86-64, each is
# a call through the PLT into libm (a third of an emulated fp32 training step); with FMA
# enabled g++ inlines it as one instruction and vectorizes the loop. Results stay the same:
# fmaf is fused either way, and -ffp-contract=off keeps g++ from fusing any a * b + c the
# source did not (the CPU twins the emulated kernels are compared with are compiled without
# FMA). Only when the machine that builds also runs FMA (the tests run where they are built);
# elsewhere the options are empty and the kernels run as before, only slower.
include(CheckCXXSourceRuns)
set(ENGINE_EMULATED_KERNEL_OPTIONS "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set(CMAKE_REQUIRED_FLAGS "-mfma")
  check_cxx_source_runs([[
    #include <cmath>
    int main(int argc, char**) {
      if (!__builtin_cpu_supports("fma") || !__builtin_cpu_supports("avx")) return 1;
      volatile float x = 1.0f + argc;
      return std::fma(x, x, -x) == 2.0f ? 0 : 1;
    }]] ENGINE_BUILD_MACHINE_RUNS_FMA)
  unset(CMAKE_REQUIRED_FLAGS)
  if(ENGINE_BUILD_MACHINE_RUNS_FMA)
    set(ENGINE_EMULATED_KERNEL_OPTIONS -mfma -ffp-contract=off)
  endif()
endif()
if(ENGINE_EMULATED_KERNEL_OPTIONS)
  message(STATUS "emulated kernels: compiled with ${ENGINE_EMULATED_KERNEL_OPTIONS}")
else()
  message(STATUS "emulated kernels: baseline ISA (this machine or compiler has no x86-64 FMA)")
endif()
