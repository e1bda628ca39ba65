// CUDA graphs on the sim device: what cudaStreamEndCapture returns (capture.cpp), instantiated
// and launched by graphs.cpp. A launch runs the captured tasks one after another on the launching
// stream, as one piece of its work: what is queued after it waits for all of it.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "sim/cuda/capture.h"

namespace engine::sim {

// A new live graph holding `tasks`.
cudaGraph_t new_graph(std::shared_ptr<const CapturedTasks> tasks);

}  // namespace engine::sim
