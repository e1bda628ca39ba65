// The sim device's error state, as CUDA keeps it: a last error per host thread (what
// cudaGetLastError returns and clears), and a sticky error for the process once a kernel has
// faulted, which every later call returns, as a real device's context is lost for good.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace engine::sim {

// Records a failure as the calling thread's last error and returns it (cudaSuccess passes).
cudaError_t result(cudaError_t status);

// What every API function returns first: the sticky error, or cudaSuccess.
cudaError_t sticky_error();

// A kernel fault or a failed copy on a stream's worker: prints `why` once on stderr (CUDA's
// code alone would not say which kernel), and makes `status` sticky.
void set_sticky_error(cudaError_t status, const std::string& why);

// Says on stderr why a call fails with a code that would not say it (a bad launch
// configuration, an unknown pointer): "sim device: <why>".
void explain(const std::string& why);

}  // namespace engine::sim
