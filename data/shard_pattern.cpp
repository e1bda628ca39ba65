#include "data/shard_pattern.h"

#include <charconv>
#include <string_view>

#include "kernels/error.h"

namespace engine::data {

namespace {

constexpr size_t kMaxShards = 10'000'000;

[[noreturn]] void bad_pattern(const std::string& pattern, const std::string& why) {
  fail("shard pattern " + pattern + ": " + why +
       " (expected e.g. DIR/train-{000000..000099}.tar or DIR/{a,b}.tar)");
}

std::vector<std::string> group_choices(const std::string& pattern, std::string_view body) {
  std::vector<std::string> choices;
  if (const size_t dots = body.find(".."); dots != std::string_view::npos) {
    const std::string_view first = body.substr(0, dots), last = body.substr(dots + 2);
    int64_t low = 0, high = 0;
    const auto parse = [](std::string_view text, int64_t& value) {
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      return !text.empty() && error == std::errc() && end == text.data() + text.size();
    };
    if (!parse(first, low) || !parse(last, high) || low < 0 || high < 0) {
      bad_pattern(pattern, "{" + std::string(body) + "} is not a range of whole numbers");
    }
    const size_t width = first.size() > 1 && first[0] == '0' ? first.size() : 0;
    const int64_t step = low <= high ? 1 : -1;
    if (static_cast<size_t>((high - low) * step) >= kMaxShards) bad_pattern(pattern, "too many");
    for (int64_t value = low;; value += step) {
      std::string text = std::to_string(value);
      if (text.size() < width) text.insert(0, width - text.size(), '0');
      choices.push_back(std::move(text));
      if (value == high) break;
    }
    return choices;
  }
  size_t begin = 0;
  while (true) {
    const size_t comma = body.find(',', begin);
    choices.emplace_back(body.substr(begin, comma - begin));
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return choices;
}

}  // namespace

bool is_shard_pattern(const std::string& text) {
  return text.size() >= 4 && text.compare(text.size() - 4, 4, ".tar") == 0;
}

std::vector<std::string> expand_shard_pattern(const std::string& pattern) {
  std::vector<std::string> names = {""};
  size_t position = 0;
  while (position < pattern.size()) {
    const size_t open = pattern.find('{', position);
    const size_t stray_close = pattern.find('}', position);
    if (stray_close < open) bad_pattern(pattern, "a '}' without its '{'");
    const std::string_view literal = std::string_view(pattern).substr(
        position, open == std::string::npos ? open : open - position);
    for (std::string& name : names)
      name += literal;
    if (open == std::string::npos) break;
    const size_t close = pattern.find('}', open);
    if (close == std::string::npos) bad_pattern(pattern, "a '{' without its '}'");
    const std::string_view body = std::string_view(pattern).substr(open + 1, close - open - 1);
    if (body.empty() || body.find('{') != std::string_view::npos) {
      bad_pattern(pattern, "an empty or nested brace group");
    }
    const std::vector<std::string> choices = group_choices(pattern, body);
    if (names.size() * choices.size() > kMaxShards) bad_pattern(pattern, "too many shard names");
    std::vector<std::string> expanded;
    expanded.reserve(names.size() * choices.size());
    for (const std::string& name : names)
      for (const std::string& choice : choices)
        expanded.push_back(name + choice);
    names = std::move(expanded);
    position = close + 1;
  }
  return names;
}

}  // namespace engine::data
