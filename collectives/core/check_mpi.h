// CHECK_MPI: ENGINE_CHECK with MPI's error codes (MPI_ERRORS_RETURN must be set on the
// communicator, otherwise MPI aborts before the check sees the code).
#pragma once

#include <mpi.h>

#include <string>

#include "kernels/error.h"

namespace engine {

struct MpiLibrary {
  using Status = int;
  static bool ok(Status status) { return status == MPI_SUCCESS; }
  static std::string describe(Status status) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    if (MPI_Error_string(status, text, &length) != MPI_SUCCESS) length = 0;
    return "MPI error " + std::to_string(status) + " (" + std::string(text, length) + ")";
  }
};

}  // namespace engine

#define CHECK_MPI(call) ENGINE_CHECK(::engine::MpiLibrary, call)
