// Backend detection: on a machine without a usable driver the process runs on the CPU and
// asking for CUDA is a clear error; with a GPU, devices resolve by local rank. And the ops'
// one dispatch (kernels/ops/dispatch.h): each device reaches its own branch, and a build
// without CUDA refuses a CUDA device instead of doing nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kernels/error.h"
#include "kernels/ops/dispatch.h"
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

TEST(OpDispatch, EachDeviceRunsItsOwnBranch) {
  auto* const native = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x40});
  std::string ran;
  const auto on_cpu = [&] { ran = "cpu"; };
  const auto on_cuda = [&](auto stream) { ran = stream == native ? "cuda" : "cuda, wrong stream"; };
  ops::on_device<true>("op", Device::cpu(), native, on_cpu, on_cuda);
  EXPECT_EQ(ran, "cpu");
  ops::on_device<true>("op", Device::cuda(1), native, on_cpu, on_cuda);
  EXPECT_EQ(ran, "cuda");
}

TEST(OpDispatch, ABuildWithoutCudaRefusesACudaDevice) {
  bool ran = false;
  const auto on_cpu = [&] { ran = true; };
  const auto on_cuda = [&](auto) { ran = true; };
  ops::on_device<false>("relu_forward", Device::cpu(), nullptr, on_cpu, on_cuda);
  EXPECT_TRUE(ran);
  ran = false;
  try {
    ops::on_device<false>("relu_forward", Device::cuda(1), nullptr, on_cpu, on_cuda);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("relu_forward: cuda:1 tensors need the CUDA backend; this build has none"),
              std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace engine
