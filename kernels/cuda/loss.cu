// Compiles the loss kernels and their entry points (see loss.cuh).
#include "kernels/cuda/loss.cuh"
