// JSON for file headers (safetensors) on nlohmann-json: a strict reader for the small subset the
// headers need, and the matching string writer. Input may be hostile: every malformed byte is
// an engine::Error naming its position, nothing nests deeper than kMaxJsonDepth, and memory
// stays bounded by the text plus the keys of the objects open at one time.
//
// Accepted: objects, arrays, strings (all escapes, \uXXXX with surrogate pairs, raw UTF-8 that
// must be valid), and non-negative integers up to 2^64-1. Rejected with a message that says
// so: true/false/null, negative numbers, fractions and exponents, leading zeros, trailing
// commas, control characters in strings, lone surrogates, overlong or truncated UTF-8, a byte
// order mark, and a key repeated in one object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace engine::nn {

inline constexpr int kMaxJsonDepth = 64;

enum class JsonKind { object, array, string, integer };

// A pull reader. The constructor runs nlohmann's parser over the whole text (through its SAX
// interface, so nothing is built and a repeated key is seen rather than overwritten) and
// throws on the first refusal; the calls below then walk text that parser has accepted.
class JsonReader {
 public:
  // Messages read "<error_prefix>bad JSON at byte <position_base + i>: <what>", so a caller
  // can name the file and report file offsets rather than offsets into `text`.
  JsonReader(std::string_view text, std::string error_prefix, uint64_t position_base = 0);

  // The kind of the next value (skips whitespace).
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
  // Only whitespace may follow the top-level value. A key repeated in one object is refused
  // here, unless the caller refused it first: the caller knows what the key names.
  void expect_end();

  // Where the next token starts, as reported in messages.
  uint64_t position() const { return position_base_ + pos_; }
  [[noreturn]] void fail(std::string_view what) const;
  [[noreturn]] void fail_at(size_t offset, std::string_view what) const;

 private:
  void skip_whitespace();
  void expect_kind(JsonKind kind, std::string_view expected);
  void open_container(bool is_array);
  void close_container();

  std::string_view text_;
  std::string error_prefix_;
  uint64_t position_base_;
  size_t pos_ = 0;
  // The open containers (true: an array), to catch a caller walking the text wrongly.
  std::vector<bool> open_is_array_;
  // Its offset and the key, found by the constructor and refused by expect_end().
  std::optional<std::pair<size_t, std::string>> first_repeated_key_;
};

// Appends `text` as a JSON string literal (quotes included), as nlohmann writes it: '"', '\\'
// and control characters are escaped, everything else is written as is. Invalid UTF-8 is an
// engine::Error (callers check with find_invalid_utf8 first, to name the string).
void append_json_string(std::string& out, std::string_view text);

// The offset of the first byte of the first sequence that breaks UTF-8 (overlong forms,
// surrogates, code points past U+10FFFF and truncated sequences included), or npos when `text`
// is valid.
size_t find_invalid_utf8(std::string_view text);

}  // namespace engine::nn
