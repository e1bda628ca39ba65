// The conv engine for the SIMT suites (kernels_conv{,_transform,_stats,_dgrad_bn}_simt_test):
// its templates and helpers, every entry point declared, none defined. simt_conv_kernels.cpp
// compiles the engine once per sanitizer variant for the four suites: it was most of each
// suite's compile, four times over.
#pragma once

#include "sim/simt/simt.h"

#define ENGINE_CONV_ENTRY_POINTS_ELSEWHERE
#define ENGINE_CONV_BATCHNORM_ENTRY_POINTS_ELSEWHERE
#include "kernels/cuda/conv.cuh"
#include "kernels/cuda/conv_backward_bn.cuh"
#include "kernels/cuda/conv_forward_stats.cuh"
