// Compiles the fill and cast kernels and their entry points (see copy.cuh).
#include "kernels/cuda/copy.cuh"
