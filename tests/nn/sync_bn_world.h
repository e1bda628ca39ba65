// The world the SyncBN suite runs in: the MPI session of tests/collectives/mpi_main.h and one
// communicator for the whole run (creating one is collective), released before MPI finalizes:
// ring-shm on the CPU, or the one --comm=NAME names (nccl, ring-nccl: on this rank's GPU, e.g.
// the sim device's). Every rank runs every test, so each test's collectives match across ranks.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "collectives/comm_factory.h"
#include "tests/collectives/mpi_main.h"

namespace engine::testing {

inline std::string& sync_bn_comm_name() {
  static std::string name = "ring-shm";
  return name;
}

// Where the layers run: the communicator's device.
inline Device sync_bn_device() {
  return sync_bn_comm_name().find("nccl") != std::string::npos ? session()->device("cuda")
                                                               : Device::cpu();
}

inline std::unique_ptr<Communicator>& sync_bn_communicator_slot() {
  static std::unique_ptr<Communicator> comm;
  return comm;
}

inline Communicator& sync_bn_communicator() {
  std::unique_ptr<Communicator>& comm = sync_bn_communicator_slot();
  if (!comm) {
    CommOptions options;
    options.timeout = std::chrono::seconds(60);  // a hang ends the job, never the CI
    comm = make_communicator(sync_bn_comm_name(), *session(), options);
  }
  return *comm;
}

class ReleaseSyncBnCommunicator : public ::testing::Environment {
 public:
  void TearDown() override { sync_bn_communicator_slot().reset(); }
};

}  // namespace engine::testing
