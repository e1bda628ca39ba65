// Errors: library code throws engine::Error; only main() turns an exception into an exit code.
//
// The CHECK_* macros (CHECK_CUDA, CHECK_CUBLAS, CHECK_CUDNN in kernels/cuda/, CHECK_NCCL and
// CHECK_MPI in collectives/) are all ENGINE_CHECK(Library, call) with a different Library
// tag, so every message has the same form:
//   [rank 3] CUDA error cudaErrorMemoryAllocation (out of memory) in cudaMalloc(&p, n)
//   at kernels/cuda/cuda_runtime.cpp:42
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace engine {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message);
};

// The rank that prefixes error and log messages. Set once by the process bootstrap (MPI);
// -1 (the default) means a world of one, and no prefix is printed.
void set_process_rank(int rank);
int process_rank();
// "[rank 3] " or "" for a world of one.
std::string rank_prefix();

// Throws engine::Error: "<rank prefix><what> in <call> at <file>:<line>".
[[noreturn]] void throw_check_failure(std::string_view what, std::string_view call,
                                      std::string_view file, int line);

// A Library tag provides:
//   using Status = ...;                          the type the library returns
//   static bool ok(Status);                      success?
//   static std::string describe(Status);         "CUDA error cudaErrorInvalidValue (invalid
//   argument)"
template <typename Library>
inline void check_status(typename Library::Status status, std::string_view call,
                         std::string_view file, int line) {
  if (Library::ok(status)) return;
  throw_check_failure(Library::describe(status), call, file, line);
}

// Throws engine::Error with the rank prefix when a precondition on user input fails.
[[noreturn]] void fail(const std::string& message);

}  // namespace engine

#define ENGINE_CHECK(Library, call) \
  ::engine::check_status<Library>((call), #call, __FILE__, __LINE__)

// Precondition check for arguments: ENGINE_REQUIRE(x.numel() == y.numel(), "relu: ...").
#define ENGINE_REQUIRE(condition, message)     \
  do {                                         \
    if (!(condition)) ::engine::fail(message); \
  } while (0)

namespace engine {
// Thrown when a device or pinned-memory allocation fails, so that the caching allocator can
// release its cache and retry before giving up.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};
}  // namespace engine
