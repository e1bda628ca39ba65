// Compiles the activation kernels and their entry points (see activation.cuh).
#include "kernels/cuda/activation.cuh"
