// Compiles the optimizer kernels and their entry points (see optim.cuh).
#include "kernels/cuda/optim.cuh"
