// Compiles the collectives' reduction kernels and their entry point (see reduce.cuh).
#include "collectives/cuda/reduce.cuh"
