// Compiles the pooling kernels and their entry points (see pool.cuh).
#include "kernels/cuda/pool.cuh"
