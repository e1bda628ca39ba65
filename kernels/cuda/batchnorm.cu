// Compiles the batchnorm kernels and their entry points (see batchnorm.cuh).
#include "kernels/cuda/batchnorm.cuh"
