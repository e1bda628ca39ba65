// printf-style formatting into a std::string, for the emulator's error messages.
#pragma once

#include <string>

namespace simt::detail {

std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));

}  // namespace simt::detail
