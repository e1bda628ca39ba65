// One JSON object on one line, built key by key: the metrics files' format (JSON Lines).
// Numbers are written with enough digits to read back the same double; non-finite ones as
// null (JSON has no NaN), so a diverged run still writes a valid file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace engine::train {

class JsonLine {
 public:
  JsonLine& add(std::string_view key, double value);
  JsonLine& add(std::string_view key, int64_t value);
  JsonLine& add(std::string_view key, int value) { return add(key, static_cast<int64_t>(value)); }
  JsonLine& add(std::string_view key, std::string_view value);
  JsonLine& add(std::string_view key, const char* value) {
    return add(key, std::string_view(value));
  }
  // The object, without a newline.
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(std::string_view name);
  std::string body_;
};

// The shortest decimal text that reads back as the same double ("0.1", "1e-05"); "null" for
// a non-finite value.
std::string json_number(double value);

// "..." with JSON's escapes, as nlohmann-json writes them; bytes that are not UTF-8 become
// U+FFFD.
std::string json_quote(std::string_view text);

// Appends line + '\n' to the file at path (created if missing) and flushes it; throws
// engine::Error naming the file when it cannot.
void append_line(const std::string& path, const std::string& line);

}  // namespace engine::train
