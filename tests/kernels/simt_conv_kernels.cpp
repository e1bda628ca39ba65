// The conv engine's kernels and entry points (conv.h's, and those with launch options),
// compiled by g++ for the SIMT emulator once per variant for the four conv suites, as conv.cu
// and conv_backward_bn.cu compile them for a GPU (simt_conv_kernels.h).
#include "sim/simt/simt.h"

#include "kernels/cuda/conv.cuh"
#include "kernels/cuda/conv_backward_bn.cuh"
#include "kernels/cuda/conv_forward_stats.cuh"
