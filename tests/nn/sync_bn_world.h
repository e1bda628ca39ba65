// The world the SyncBN suite runs in: the MPI session of tests/collectives/mpi_main.h and one
// ring-shm communicator for the whole run (creating one is collective), released before MPI
// finalizes. Every rank runs every test, so each test's collectives match across ranks.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "collectives/comm_factory.h"
#include "tests/collectives/mpi_main.h"

namespace engine::testing {

inline std::unique_ptr<Communicator>& sync_bn_communicator_slot() {
  static std::unique_ptr<Communicator> comm;
  return comm;
}

inline Communicator& sync_bn_communicator() {
  std::unique_ptr<Communicator>& comm = sync_bn_communicator_slot();
  if (!comm) {
    CommOptions options;
    options.timeout = std::chrono::seconds(60);  // a hang ends the job, never the CI
    comm = make_communicator("ring-shm", *session(), options);
  }
  return *comm;
}

class ReleaseSyncBnCommunicator : public ::testing::Environment {
 public:
  void TearDown() override { sync_bn_communicator_slot().reset(); }
};

}  // namespace engine::testing
