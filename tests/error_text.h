// What an error says, for tests that check it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kernels/error.h"

namespace engine::testing {

// The message of the engine::Error fn throws, or `none` when it throws none.
template <typename Fn>
std::string error_of(Fn&& fn, const std::string& none = "") {
  try {
    fn();
  } catch (const Error& error) {
    return error.what();
  }
  return none;
}

// text contains part; the failure shows both.
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" lacks \"" << part << "\"";
}

}  // namespace engine::testing
