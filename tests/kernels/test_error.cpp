// The CHECK_* family: one template, one message form (rank, library error, call, file:line).
#include <gtest/gtest.h>

#include <string>

#include "kernels/error.h"
#if ENGINE_TEST_CHECK_CUDA
#include "kernels/cuda/check_cuda.h"
#endif

namespace engine {
namespace {

struct FakeLibrary {
  using Status = int;
  static bool ok(Status status) { return status == 0; }
  static std::string describe(Status status) { return "fake error " + std::to_string(status); }
};

int fake_call(int status) {
  return status;
}

std::string message_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(Check, SuccessDoesNothing) {
  EXPECT_NO_THROW(ENGINE_CHECK(FakeLibrary, fake_call(0)));
}

TEST(Check, FailureNamesCallFileLineAndRank) {
  const int line = __LINE__ + 1;
  const std::string text = message_of([] { ENGINE_CHECK(FakeLibrary, fake_call(7)); });
  EXPECT_EQ(text, "fake error 7 in fake_call(7) at " + std::string(__FILE__) + ":" +
                      std::to_string(line));
  set_process_rank(3);
  const std::string ranked = message_of([] { ENGINE_CHECK(FakeLibrary, fake_call(2)); });
  set_process_rank(-1);
  EXPECT_EQ(ranked.rfind("[rank 3] fake error 2 in fake_call(2)", 0), 0u) << ranked;
}

#if ENGINE_TEST_CHECK_CUDA
TEST(Check, CudaErrorsCarryTheirName) {
  const std::string text = message_of([] { CHECK_CUDA(cudaErrorInvalidValue); });
  EXPECT_NE(text.find("CUDA error cudaErrorInvalidValue (invalid argument) in "
                      "cudaErrorInvalidValue at "),
            std::string::npos)
      << text;
}
#endif

}  // namespace
}  // namespace engine
