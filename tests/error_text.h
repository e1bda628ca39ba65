// The message of the engine::Error a call throws, for tests that check what an error says.
#pragma once

#include <string>

#include "kernels/error.h"

namespace engine::testing {

// The error's message, or "" when fn does not throw engine::Error.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

}  // namespace engine::testing
