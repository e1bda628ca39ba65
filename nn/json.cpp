#include "nn/json.h"

#include <charconv>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "kernels/error.h"
#include "nn/safetensors_internal.h"

namespace engine::nn {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

size_t skip_spaces(std::string_view text, size_t i) {
  while (i < text.size() && is_space(text[i]))
    ++i;
  return i;
}

// One past the closing quote of the string token at `start`, in text nlohmann has accepted:
// there a backslash is always followed by the character it escapes.
size_t string_token_end(std::string_view text, size_t start) {
  size_t i = start + 1;
  while (text[i] != '"')
    i += text[i] == '\\' ? 2 : 1;
  return i + 1;
}

size_t digits_end(std::string_view text, size_t i) {
  while (i < text.size() && is_digit(text[i]))
    ++i;
  return i;
}

const char kHexDigits[] = "0123456789ABCDEF";

std::string describe_byte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7F) return std::string("'") + c + "'";
  return std::string("byte 0x") + kHexDigits[byte >> 4] + kHexDigits[byte & 0xF];
}

// nlohmann names the byte where UTF-8 decoding failed (or the end, for a truncated sequence);
// messages name the first byte of the sequence it broke, as a reader of the bytes counts.
size_t utf8_sequence_start(std::string_view text, size_t failed) {
  for (size_t back = 1; back <= 3 && back <= failed; ++back) {
    const auto byte = static_cast<unsigned char>(text[failed - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: its lead is further back
    const size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
    return back < length ? failed - back : failed;
  }
  return failed;
}

// nlohmann's parser driven through SAX: it accepts or refuses the JSON grammar and UTF-8, this
// refuses what the subset leaves out and words every refusal as the engine's messages do.
// nlohmann reports no positions to SAX handlers, so `cursor_` follows the tokens it accepts.
class SubsetValidator : public nlohmann::json_sax<nlohmann::json> {
 public:
  SubsetValidator(std::string_view text, const JsonReader& reader) : text_(text), reader_(reader) {}

  // The first key repeated within one object, if any.
  std::optional<std::pair<size_t, std::string>> repeated_key;

  bool null() override { refuse_literal(); }
  bool boolean(bool) override { refuse_literal(); }
  bool number_integer(number_integer_t) override {  // only negative numbers come signed
    refuse_number(next_token().start);
  }
  bool number_unsigned(number_unsigned_t) override {
    const size_t start = next_token().start;
    // A 0 ends the number: "04" is 0, then a 4 where no value may stand.
    accept_token(text_[start] == '0' ? start + 1 : digits_end(text_, start), After::value);
    return true;
  }
  bool number_float(number_float_t, const string_t&) override { refuse_number(next_token().start); }
  bool string(string_t&) override {
    accept_token(string_token_end(text_, next_token().start), After::value);
    return true;
  }
  bool binary(binary_t&) override { return false; }  // not produced by the JSON parser
  bool key(string_t& key) override {
    const size_t start = next_token().start;
    if (!open_.back().keys.insert(key).second && !repeated_key) repeated_key.emplace(start, key);
    accept_token(string_token_end(text_, start), After::key);
    return true;
  }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::json::exception& error) override {
    // nlohmann counts the bytes it has read, the end of the input included.
    const size_t last = std::min(position == 0 ? 0 : position - 1, text_.size());
    const Token token = next_token();
    if (after_ == After::value && token.start == cursor_ && token.start < text_.size() &&
        is_digit(text_[token.start]) && text_[cursor_ - 1] == '0') {
      reader_.fail_at(cursor_ - 1, "leading zeros are not allowed");  // "04" reads as 0, 4
    }
    if (after_ == After::value && open_.empty()) {
      reader_.fail_at(token.start,
                      "unexpected " + describe(token.start) + " after the top-level value");
    }
    // A token where the grammar wants a separator, or a key, is misplaced whatever it is.
    const bool in_array = !open_.empty() && open_.back().is_array;
    const bool wants_separator =
        !token.after_separator && (after_ == After::key || after_ == After::value);
    const bool wants_key =
        !in_array && (after_ == After::open || (after_ == After::value && token.after_separator));
    if (wants_separator ||
        (wants_key && (token.start == text_.size() || text_[token.start] != '"'))) {
      reader_.fail_at(token.start, misplaced_token(token));
    }
    const std::string_view what = error.what();
    const auto says = [&](std::string_view words) { return what.find(words) != what.npos; };
    if (error.id == 406 || says("invalid number")) refuse_number(token.start);
    if (says("invalid literal")) {
      if (std::string_view("tfn").find(text_[token.start]) != std::string_view::npos)
        refuse_literal();
      reader_.fail_at(token.start, "unexpected " + describe(token.start));
    }
    if (says("ill-formed UTF-8")) {
      const size_t start = utf8_sequence_start(text_, last);
      reader_.fail_at(start, "invalid UTF-8 (" + describe(start) + ") in a string");
    }
    const bool at_end = last == text_.size();
    if (says("missing closing quote")) reader_.fail_at(last, "unterminated string");
    if (says("control character")) {
      reader_.fail_at(last,
                      "control character " + describe(last) + " in a string (must be escaped)");
    }
    if (says("after backslash")) {
      reader_.fail_at(
          last, at_end ? "unterminated escape" : "unknown escape \\" + std::string(1, text_[last]));
    }
    if (says("must be followed by 4 hex digits")) {
      reader_.fail_at(last, at_end ? "unterminated \\u escape"
                                   : "\\u escape needs 4 hex digits, got " + describe(last));
    }
    if (says("must be followed by U+DC00")) {
      // Either the high surrogate's escape is not followed by "\u", or that escape's four hex
      // digits, read to `last`, are not a low surrogate.
      const bool low_read = last >= 5 && text_.substr(last - 5, 2) == "\\u";
      reader_.fail_at(last, low_read ? "high surrogate not followed by a low one"
                                     : "high surrogate not followed by a \\u escape");
    }
    if (says("must follow U+D800")) reader_.fail_at(last, "lone low surrogate in a \\u escape");
    if (!says("unexpected")) reader_.fail_at(last, what);  // none other known: as nlohmann says
    reader_.fail_at(token.start, misplaced_token(token));
  }

 private:
  enum class After { start, open, key, value };  // what the last accepted token was
  struct Token {
    size_t start;
    bool after_separator;  // the ',' or ':' expected before it was there
  };
  struct Container {
    bool is_array;
    std::unordered_set<std::string> keys;
  };

  // Where the token nlohmann is handling now starts: past the separator the grammar expects
  // after the last token, when it is there.
  Token next_token() const {
    size_t i = skip_spaces(text_, cursor_);
    const char separator = after_ == After::key                       ? ':'
                           : after_ == After::value && !open_.empty() ? ','
                                                                      : '\0';
    const bool after_separator = separator != '\0' && i < text_.size() && text_[i] == separator;
    if (after_separator) i = skip_spaces(text_, i + 1);
    return {i, after_separator};
  }

  void accept_token(size_t end, After after) {
    cursor_ = end;
    after_ = after;
  }

  std::string describe(size_t offset) const {
    return offset < text_.size() ? describe_byte(text_[offset]) : "end of input";
  }

  bool open(bool is_array) {
    const size_t start = next_token().start;
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      reader_.fail_at(start, "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    open_.push_back({is_array, {}});
    accept_token(start + 1, After::open);
    return true;
  }

  bool close() {
    accept_token(next_token().start + 1, After::value);
    open_.pop_back();
    return true;
  }

  [[noreturn]] void refuse_literal() const {
    reader_.fail_at(next_token().start, "true, false and null are not allowed");
  }

  // A number with a sign, a fraction, an exponent or more than 64 bits.
  [[noreturn]] void refuse_number(size_t start) const {
    if (text_[start] == '-') reader_.fail_at(start, "negative numbers are not allowed");
    const size_t digits = digits_end(text_, start);
    if (digits < text_.size() &&
        (text_[digits] == '.' || text_[digits] == 'e' || text_[digits] == 'E')) {
      reader_.fail_at(digits, "only integers are allowed (no fractions or exponents)");
    }
    const std::string_view number = text_.substr(start, digits - start);
    reader_.fail_at(start, "integer " + std::string(number.substr(0, 40)) +
                               (number.size() > 40 ? "..." : "") + " overflows 2^64-1");
  }

  // A token the grammar does not allow where it stands.
  std::string misplaced_token(const Token& token) const {
    const bool at_end = token.start == text_.size();
    const bool in_array = !open_.empty() && open_.back().is_array;
    const std::string unexpected = "unexpected " + describe(token.start);
    switch (after_) {
      case After::start:
        return unexpected;
      case After::open:
        if (at_end) return in_array ? "unterminated array" : "unterminated object";
        return in_array ? unexpected : "expected a string key";
      case After::key:
        return token.after_separator ? unexpected : "expected ':' after an object key";
      case After::value:
        break;
    }
    if (token.after_separator) {
      if (!in_array) return "expected a string key";
      return !at_end && text_[token.start] == ']' ? "trailing comma in an array" : unexpected;
    }
    if (at_end) return in_array ? "unterminated array" : "unterminated object";
    return in_array ? "expected ',' or ']' after an array element"
                    : "expected ',' or '}' after an object member";
  }

  std::string_view text_;
  const JsonReader& reader_;
  size_t cursor_ = 0;  // one past the last token accepted
  After after_ = After::start;
  std::vector<Container> open_;
};

}  // namespace

JsonReader::JsonReader(std::string_view text, std::string error_prefix, uint64_t position_base)
    : text_(text), error_prefix_(std::move(error_prefix)), position_base_(position_base) {
  // nlohmann skips a byte order mark; JSON texts exchanged between systems must not have one
  // (RFC 8259 section 8.1), and the safetensors reference reader refuses it.
  if (!text.empty() && static_cast<unsigned char>(text[0]) == 0xEF) {
    fail_at(0, "unexpected " + describe_byte(text[0]));
  }
  SubsetValidator validator(text, *this);
  nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &validator,
                            nlohmann::json::input_format_t::json, /*strict=*/true,
                            /*ignore_comments=*/false);
  first_repeated_key_ = std::move(validator.repeated_key);
}

void JsonReader::fail(std::string_view what) const {
  fail_at(pos_, what);
}

void JsonReader::fail_at(size_t offset, std::string_view what) const {
  engine::fail(error_prefix_ + "bad JSON at byte " + std::to_string(position_base_ + offset) +
               ": " + std::string(what));
}

void JsonReader::skip_whitespace() {
  pos_ = skip_spaces(text_, pos_);
}

JsonKind JsonReader::peek() {
  skip_whitespace();
  if (pos_ == text_.size()) fail("unexpected end of input");
  const char c = text_[pos_];
  if (c == '{') return JsonKind::object;
  if (c == '[') return JsonKind::array;
  if (c == '"') return JsonKind::string;
  if (is_digit(c)) return JsonKind::integer;
  fail("unexpected " + describe_byte(c));
}

void JsonReader::expect_kind(JsonKind kind, std::string_view expected) {
  if (peek() != kind) fail("expected " + std::string(expected));
}

void JsonReader::open_container(bool is_array) {
  open_is_array_.push_back(is_array);
  ++pos_;
}

void JsonReader::close_container() {
  open_is_array_.pop_back();
  ++pos_;
}

void JsonReader::begin_object() {
  expect_kind(JsonKind::object, "an object");
  open_container(false);
}

bool JsonReader::next_key(std::string& key) {
  if (open_is_array_.empty() || open_is_array_.back()) {
    throw std::logic_error("JsonReader::next_key outside an object");
  }
  skip_whitespace();
  if (text_[pos_] == '}') {
    close_container();
    return false;
  }
  if (text_[pos_] == ',') ++pos_;
  key = read_string();
  skip_whitespace();
  ++pos_;  // the ':'
  return true;
}

void JsonReader::begin_array() {
  expect_kind(JsonKind::array, "an array");
  open_container(true);
}

bool JsonReader::next_element() {
  if (open_is_array_.empty() || !open_is_array_.back()) {
    throw std::logic_error("JsonReader::next_element outside an array");
  }
  skip_whitespace();
  if (text_[pos_] == ']') {
    close_container();
    return false;
  }
  if (text_[pos_] == ',') ++pos_;
  return true;
}

std::string JsonReader::read_string() {
  expect_kind(JsonKind::string, "a string");
  const size_t end = string_token_end(text_, pos_);
  // nlohmann decodes the escapes; the token is one it has accepted already.
  std::string value = nlohmann::json::parse(text_.substr(pos_, end - pos_)).get<std::string>();
  pos_ = end;
  return value;
}

uint64_t JsonReader::read_integer() {
  expect_kind(JsonKind::integer, "a non-negative integer");
  const size_t end = digits_end(text_, pos_);
  uint64_t value = 0;
  std::from_chars(text_.data() + pos_, text_.data() + end, value);  // checked: fits 64 bits
  pos_ = end;
  return value;
}

void JsonReader::skip_value() {
  size_t depth = 0;
  do {
    skip_whitespace();
    const char c = text_[pos_];
    if (c == '"') {
      pos_ = string_token_end(text_, pos_);
    } else if (is_digit(c)) {
      pos_ = digits_end(text_, pos_);
    } else {
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      ++pos_;  // a bracket, or a ',' or ':' inside the value
    }
  } while (depth > 0);
}

void JsonReader::expect_end() {
  skip_whitespace();
  if (pos_ != text_.size())
    fail("unexpected " + describe_byte(text_[pos_]) + " after the top-level value");
  if (first_repeated_key_) {
    fail_at(first_repeated_key_->first,
            "duplicate key " + quoted_for_message(first_repeated_key_->second));
  }
}

void append_json_string(std::string& out, std::string_view text) {
  try {
    out += nlohmann::json(std::string(text)).dump();
  } catch (const nlohmann::json::type_error&) {
    engine::fail("a JSON string is not valid UTF-8 (byte " +
                 std::to_string(find_invalid_utf8(text)) + ")");
  }
}

size_t find_invalid_utf8(std::string_view text) {
  try {
    (void)nlohmann::json(std::string(text)).dump();
    return std::string_view::npos;
  } catch (const nlohmann::json::type_error& error) {
    // 316: "invalid UTF-8 byte at index N: 0x.." or, for a truncated last sequence,
    // "incomplete UTF-8 string; last byte: 0x..".
    const std::string_view what = error.what();
    const size_t at = what.find("at index ");
    size_t failed = text.size();
    if (at != what.npos) {
      const char* digits = what.data() + at + 9;
      std::from_chars(digits, what.data() + what.size(), failed);
    }
    return utf8_sequence_start(text, failed);
  }
}

}  // namespace engine::nn
