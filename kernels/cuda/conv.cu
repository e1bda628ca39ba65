// Compiles the conv2d kernels and their entry points (see conv.cuh).
#include "kernels/cuda/conv.cuh"
