// Backend detection: on a machine without a usable driver the process runs on the CPU and
// asking for CUDA is a clear error; with a GPU, devices resolve by local rank.
#include <gtest/gtest.h>

#include "kernels/error.h"
#include "kernels/runtime.h"

namespace engine {
namespace {

TEST(Runtime, AutoPicksWhatExists) {
  const Device device = resolve_device("auto", 0);
  EXPECT_EQ(device.is_cuda(), cuda_device_count() > 0);
  EXPECT_EQ(resolve_device("cpu"), Device::cpu());
}

TEST(Runtime, WithoutCudaAskingForItSaysWhy) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this process has a CUDA device";
  EXPECT_FALSE(cuda_unavailable_reason().empty());
  for (const char* request : {"cuda", "cuda:0", "cuda:1"}) {
    try {
      resolve_device(request);
      FAIL() << "expected an error for " << request;
    } catch (const Error& error) {
      const std::string text = error.what();
      EXPECT_NE(text.find(std::string("--device ") + request + " asks for CUDA"), std::string::npos)
          << text;
      EXPECT_NE(text.find(cuda_unavailable_reason()), std::string::npos) << text;
    }
  }
}

TEST(Runtime, WithCudaDevicesResolveByLocalRank) {
  const int count = cuda_device_count();
  if (count == 0) GTEST_SKIP() << "no usable CUDA device: " << cuda_unavailable_reason();
  EXPECT_EQ(resolve_device("cuda", 0), Device::cuda(0));
  EXPECT_EQ(resolve_device("auto", count), Device::cuda(0));
  EXPECT_THROW(resolve_device("cuda", count), Error);  // more ranks than GPUs
  EXPECT_THROW(resolve_device("cuda:" + std::to_string(count)), Error);
}

TEST(Runtime, UnknownDeviceTextIsAnError) {
  EXPECT_THROW(resolve_device("tpu"), Error);
}

}  // namespace
}  // namespace engine
