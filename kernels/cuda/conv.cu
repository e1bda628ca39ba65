// Compiles the conv2d kernels and their entry points (see conv.cuh), and the forward with BatchNorm
// statistics (conv_forward_stats.cuh).
#include "kernels/cuda/conv.cuh"
#include "kernels/cuda/conv_forward_stats.cuh"
