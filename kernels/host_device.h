// ENGINE_HOST_DEVICE marks small functions (shape arithmetic) that both host code and CUDA
// kernels call. Under nvcc it is __host__ __device__; with g++ (CPU code, SIMT emulator) it
// is nothing.
#pragma once

#if defined(__CUDACC__)
#define ENGINE_HOST_DEVICE __host__ __device__
#else
#define ENGINE_HOST_DEVICE
#endif
