// What every CUDA-backend .cu file includes first in an ENGINE_CUDA=SIM build (kernels/
// CMakeLists.txt passes it with -include): the SIMT emulator, so g++ compiles the unchanged
// kernels, and the sim device's launch, so launchers queue them on their streams.
#pragma once

#include "sim/simt/simt.h"
// After simt.h: kernels/cuda/launch.h then takes engine::sim::launch instead of simt::launch.
#define ENGINE_SIM_DEVICE_LAUNCH 1
#include "sim/cuda/launch.h"
