# Warnings for our own C++ code (not for nvcc's host pass, which sees CUDA's headers).
add_library(engine_warnings INTERFACE)
target_compile_options(engine_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unknown-pragmas>)
