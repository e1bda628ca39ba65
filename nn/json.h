// A strict pull parser for the small JSON subset that file headers need (safetensors), and
// the matching string writer. Input may be hostile: every malformed byte is an engine::Error
// naming its position, nothing recurses deeper than kMaxJsonDepth, and nothing allocates more
// than the text itself holds.
//
// Accepted: objects, arrays, strings (all escapes, \uXXXX with surrogate pairs, raw UTF-8 that
// must be valid), and non-negative integers up to 2^64-1. Rejected with a message that says
// so: true/false/null, negative numbers, fractions and exponents, leading zeros, trailing
// commas, control characters in strings, lone surrogates, overlong or truncated UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace engine::nn {

inline constexpr int kMaxJsonDepth = 64;

enum class JsonKind { object, array, string, integer };

class JsonReader {
 public:
  // Messages read "<error_prefix>bad JSON at byte <position_base + i>: <what>", so a caller
  // can name the file and report file offsets rather than offsets into `text`.
  JsonReader(std::string_view text, std::string error_prefix, uint64_t position_base = 0);

  // The kind of the next value (skips whitespace); fails on anything outside the subset.
  JsonKind peek();

  void begin_object();
  // Reads the next member's key and its ':' into `key`; false (and the '}' consumed) at the
  // end of the object.
  bool next_key(std::string& key);

  void begin_array();
  // True when another element follows (its value is next); false at ']' (consumed).
  bool next_element();

  std::string read_string();
  uint64_t read_integer();
  // Skips one value of any accepted kind, objects and arrays included.
  void skip_value();
  // Only whitespace may follow the top-level value.
  void expect_end();

  // Where the next token starts, as reported in messages.
  uint64_t position() const { return position_base_ + pos_; }
  [[noreturn]] void fail(std::string_view what) const;

 private:
  void skip_whitespace();
  void open_container();
  void close_container();
  bool at_end() const { return pos_ >= text_.size(); }
  char current() const { return text_[pos_]; }
  uint32_t read_hex4();
  void append_utf8_sequence(std::string& out);

  std::string_view text_;
  std::string error_prefix_;
  uint64_t position_base_;
  size_t pos_ = 0;
  // One flag per open container: has it had an element yet (so the next needs a comma)?
  std::vector<bool> open_has_elements_;
};

// Appends `text` as a JSON string literal (quotes included): '"', '\\' and control characters
// are escaped, everything else (valid UTF-8) is written as is.
void append_json_string(std::string& out, std::string_view text);

// The offset of the first byte that breaks UTF-8 (overlong forms, surrogates, code points past
// U+10FFFF and truncated sequences included), or npos when `text` is valid.
size_t find_invalid_utf8(std::string_view text);

}  // namespace engine::nn
