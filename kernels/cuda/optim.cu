// Compiles the SGD kernel and its entry point (see optim.cuh).
#include "kernels/cuda/optim.cuh"
