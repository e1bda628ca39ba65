// Compiles conv2d_backward_data_bn (conv_backward_bn.cuh) apart from conv.cu, whose compile is
// long already: only the bf16 and tf32 staged engines with the gated store are instantiated
// here (22 kernels); the fallback calls conv.cu's entry point, which alone defines conv.cuh's.
#define ENGINE_CONV_ENTRY_POINTS_ELSEWHERE
#include "kernels/cuda/conv_backward_bn.cuh"
