// The budget check's self-test: one of the tensor-core GEMM kernels the engine runs (the
// pointwise convolution's), compiled with its registers capped below what it needs
// (-maxrregcount in tests/cuda_budget/CMakeLists.txt), so that ptxas spills. The check must
// report the spill against the same budget row the real kernel passes.
#include "kernels/cuda/gemm_epilogue.cuh"
#include "kernels/cuda/gemm_operands.cuh"
#include "kernels/cuda/gemm_tiles.cuh"

namespace engine::cuda {

template __global__ void
gemm_mma_kernel<Bf16Mma, Bf16Mma::kVector, KContiguousOperand<__nv_bfloat16>,
                KContiguousOperand<__nv_bfloat16>, StoreToMatrix<__nv_bfloat16>>(
    int32_t, int32_t, int32_t, int32_t, KContiguousOperand<__nv_bfloat16>,
    KContiguousOperand<__nv_bfloat16>, StoreToMatrix<__nv_bfloat16>, bool);

}  // namespace engine::cuda
