#include "nn/json.h"

#include <stdexcept>
#include <utility>

#include "kernels/error.h"

namespace engine::nn {
namespace {

bool is_continuation(unsigned char byte) {
  return (byte & 0xC0) == 0x80;
}

// Length of the valid UTF-8 sequence at text[i], or 0 when it is not one (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF).
size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char second_min = 0x80, second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;  // overlong below U+0800
    if (lead == 0xED) second_max = 0x9F;  // U+D800..U+DFFF are surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;  // overlong below U+10000
    if (lead == 0xF4) second_max = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() - i < length) return 0;
  if (byte(1) < second_min || byte(1) > second_max) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (!is_continuation(byte(k))) return 0;
  }
  return length;
}

void append_code_point(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

const char kHexDigits[] = "0123456789ABCDEF";

std::string describe_byte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7F) return std::string("'") + c + "'";
  return std::string("byte 0x") + kHexDigits[byte >> 4] + kHexDigits[byte & 0xF];
}

}  // namespace

JsonReader::JsonReader(std::string_view text, std::string error_prefix, uint64_t position_base)
    : text_(text), error_prefix_(std::move(error_prefix)), position_base_(position_base) {}

void JsonReader::fail(std::string_view what) const {
  engine::fail(error_prefix_ + "bad JSON at byte " + std::to_string(position()) + ": " +
               std::string(what));
}

void JsonReader::skip_whitespace() {
  while (!at_end() &&
         (current() == ' ' || current() == '\t' || current() == '\n' || current() == '\r')) {
    ++pos_;
  }
}

JsonKind JsonReader::peek() {
  skip_whitespace();
  if (at_end()) fail("unexpected end of input");
  const char c = current();
  if (c == '{') return JsonKind::object;
  if (c == '[') return JsonKind::array;
  if (c == '"') return JsonKind::string;
  if (c >= '0' && c <= '9') return JsonKind::integer;
  if (c == '-') fail("negative numbers are not allowed");
  if (c == 't' || c == 'f' || c == 'n') fail("true, false and null are not allowed");
  fail("unexpected " + describe_byte(c));
}

void JsonReader::open_container() {
  if (open_has_elements_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
    fail("nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  open_has_elements_.push_back(false);
  ++pos_;
}

void JsonReader::close_container() {
  open_has_elements_.pop_back();
  ++pos_;
}

void JsonReader::begin_object() {
  if (peek() != JsonKind::object) fail("expected an object");
  open_container();
}

bool JsonReader::next_key(std::string& key) {
  if (open_has_elements_.empty()) throw std::logic_error("JsonReader::next_key outside an object");
  skip_whitespace();
  if (at_end()) fail("unterminated object");
  if (current() == '}') {
    close_container();
    return false;
  }
  if (open_has_elements_.back()) {
    if (current() != ',') fail("expected ',' or '}' after an object member");
    ++pos_;
    skip_whitespace();
  }
  open_has_elements_.back() = true;
  if (at_end() || current() != '"') fail("expected a string key");
  key = read_string();
  skip_whitespace();
  if (at_end() || current() != ':') fail("expected ':' after an object key");
  ++pos_;
  return true;
}

void JsonReader::begin_array() {
  if (peek() != JsonKind::array) fail("expected an array");
  open_container();
}

bool JsonReader::next_element() {
  if (open_has_elements_.empty()) {
    throw std::logic_error("JsonReader::next_element outside an array");
  }
  skip_whitespace();
  if (at_end()) fail("unterminated array");
  if (current() == ']') {
    close_container();
    return false;
  }
  if (open_has_elements_.back()) {
    if (current() != ',') fail("expected ',' or ']' after an array element");
    ++pos_;
    skip_whitespace();
    if (!at_end() && current() == ']') fail("trailing comma in an array");
  }
  open_has_elements_.back() = true;
  return true;
}

uint32_t JsonReader::read_hex4() {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    if (at_end()) fail("unterminated \\u escape");
    const char c = current();
    uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      fail("\\u escape needs 4 hex digits, got " + describe_byte(c));
    }
    value = value * 16 + digit;
    ++pos_;
  }
  return value;
}

void JsonReader::append_utf8_sequence(std::string& out) {
  const size_t length = utf8_sequence_length(text_, pos_);
  if (length == 0) fail("invalid UTF-8 (" + describe_byte(current()) + ") in a string");
  out.append(text_.substr(pos_, length));
  pos_ += length;
}

std::string JsonReader::read_string() {
  if (peek() != JsonKind::string) fail("expected a string");
  ++pos_;
  std::string out;
  while (true) {
    if (at_end()) fail("unterminated string");
    const char c = current();
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (static_cast<unsigned char>(c) < 0x20) {
      fail("control character " + describe_byte(c) + " in a string (must be escaped)");
    }
    if (static_cast<unsigned char>(c) >= 0x80) {
      append_utf8_sequence(out);
      continue;
    }
    if (c != '\\') {
      out.push_back(c);
      ++pos_;
      continue;
    }
    ++pos_;
    if (at_end()) fail("unterminated escape");
    const char escape = current();
    ++pos_;
    switch (escape) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '/':
        out.push_back('/');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        uint32_t cp = read_hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in a \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (text_.substr(pos_, 2) != "\\u") fail("high surrogate not followed by a \\u escape");
          pos_ += 2;
          const uint32_t low = read_hex4();
          if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate not followed by a low one");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_code_point(out, cp);
        break;
      }
      default:
        --pos_;
        fail("unknown escape \\" + std::string(1, escape));
    }
  }
}

uint64_t JsonReader::read_integer() {
  if (peek() != JsonKind::integer) fail("expected a non-negative integer");
  const size_t start = pos_;
  size_t digits_end = start;
  while (digits_end < text_.size() && text_[digits_end] >= '0' && text_[digits_end] <= '9') {
    ++digits_end;
  }
  const std::string_view digits = text_.substr(start, digits_end - start);
  uint64_t value = 0;
  for (const char c : digits) {
    const auto digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) {
      fail("integer " + std::string(digits.substr(0, 40)) + (digits.size() > 40 ? "..." : "") +
           " overflows 2^64-1");
    }
    value = value * 10 + digit;
  }
  if (digits.size() > 1 && digits[0] == '0') fail("leading zeros are not allowed");
  pos_ = digits_end;
  if (!at_end() && (current() == '.' || current() == 'e' || current() == 'E')) {
    fail("only integers are allowed (no fractions or exponents)");
  }
  return value;
}

void JsonReader::skip_value() {
  std::string key;
  switch (peek()) {
    case JsonKind::object:
      begin_object();
      while (next_key(key))
        skip_value();
      return;
    case JsonKind::array:
      begin_array();
      while (next_element())
        skip_value();
      return;
    case JsonKind::string:
      read_string();
      return;
    case JsonKind::integer:
      read_integer();
      return;
  }
}

void JsonReader::expect_end() {
  skip_whitespace();
  if (!at_end()) fail("unexpected " + describe_byte(current()) + " after the top-level value");
}

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out.push_back(kHexDigits[static_cast<unsigned char>(c) >> 4]);
          out.push_back(kHexDigits[static_cast<unsigned char>(c) & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

size_t find_invalid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = utf8_sequence_length(text, i);
    if (length == 0) return i;
    i += length;
  }
  return std::string_view::npos;
}

}  // namespace engine::nn
