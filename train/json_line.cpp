#include "train/json_line.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "kernels/error.h"

namespace engine::train {

std::string json_quote(std::string_view text) {
  // A byte that is not UTF-8 becomes U+FFFD: a metrics line stays valid JSON whatever it holds.
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void JsonLine::key(std::string_view name) {
  if (!body_.empty()) body_ += ", ";
  body_ += json_quote(name);
  body_ += ": ";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[32];
  // The shortest of %.6g ... %.17g that reads back the same value keeps the file readable.
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

JsonLine& JsonLine::add(std::string_view name, double value) {
  key(name);
  body_ += json_number(value);
  return *this;
}

JsonLine& JsonLine::add(std::string_view name, int64_t value) {
  key(name);
  body_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::add(std::string_view name, std::string_view value) {
  key(name);
  body_ += json_quote(value);
  return *this;
}

void append_line(const std::string& path, const std::string& line) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (!file) fail("cannot open " + path + " for appending: " + std::strerror(errno));
  const bool written = std::fwrite(line.data(), 1, line.size(), file) == line.size() &&
                       std::fputc('\n', file) != EOF && std::fflush(file) == 0;
  const int error = errno;
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) fail("cannot write " + path + ": " + std::strerror(error));
}

}  // namespace engine::train
