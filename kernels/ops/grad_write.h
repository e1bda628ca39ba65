// How an op writes a parameter's gradient (conv2d's filter and bias, BatchNorm's weight and
// bias).
#pragma once

namespace engine {

// Whether a weight gradient replaces what its buffer holds or is added to it (micro-batches
// accumulating into one step).
enum class GradWrite { overwrite, accumulate };

}  // namespace engine
