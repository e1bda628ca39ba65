#include "nn/checkpoint_metadata.h"

#include <charconv>
#include <system_error>
#include <vector>

#include "kernels/error.h"
#include "nn/json.h"
#include "nn/safetensors_internal.h"

namespace engine::nn {
namespace {

constexpr std::string_view kExtraPrefix = "extra.";

// The shortest text that reads back as the same float.
std::string float_text(float value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  return {text, result.ptr};
}

std::string float_list_text(const std::vector<float>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += ',';
    text += float_text(values[i]);
  }
  return text;
}

std::string string_list_json(const std::vector<std::string>& items) {
  std::string json = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) json += ',';
    append_json_string(json, items[i]);
  }
  return json + "]";
}

std::string bool_text(bool value) {
  return value ? "true" : "false";
}

// Reads the values of one metadata map, naming the file and the key in every error.
class MetadataDecoder {
 public:
  MetadataDecoder(const std::map<std::string, std::string>& metadata, const std::string& path)
      : metadata_(metadata), path_(path) {}

  bool has(const std::string& key) const { return metadata_.contains(key); }
  const std::string& text(const std::string& key) const {
    const auto found = metadata_.find(key);
    if (found == metadata_.end()) fail(path_ + ": checkpoint metadata lacks \"" + key + "\"");
    return found->second;
  }

  template <typename Integer>
  Integer integer(const std::string& key, Integer fallback) const {
    if (!has(key)) return fallback;
    const std::string& value = text(key);
    Integer parsed{};
    const auto result = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (value.empty() || result.ec != std::errc() || result.ptr != value.data() + value.size())
      bad(key, "an integer");
    return parsed;
  }

  template <typename Integer>
  Integer required_integer(const std::string& key) const {
    text(key);  // names a missing key
    return integer<Integer>(key, 0);
  }

  float real(const std::string& key, float fallback) const {
    if (!has(key)) return fallback;
    const std::vector<float> values = reals(key);
    if (values.size() != 1) bad(key, "a number");
    return values[0];
  }

  std::vector<float> reals(const std::string& key) const {
    std::vector<float> values;
    if (!has(key)) return values;
    const std::string& value = text(key);
    if (value.empty()) return values;
    const char* at = value.data();
    const char* const end = value.data() + value.size();
    while (true) {
      float parsed = 0;
      const auto result = std::from_chars(at, end, parsed);
      if (result.ec != std::errc()) bad(key, "a comma-separated list of numbers");
      values.push_back(parsed);
      at = result.ptr;
      if (at == end) return values;
      if (*at != ',') bad(key, "a comma-separated list of numbers");
      ++at;
    }
  }

  bool flag(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const std::string& value = text(key);
    if (value != "true" && value != "false") bad(key, "true or false");
    return value == "true";
  }

  std::vector<std::string> strings(const std::string& key) const {
    std::vector<std::string> items;
    if (!has(key)) return items;
    JsonReader json(text(key), path_ + ": checkpoint metadata \"" + key + "\": ");
    if (json.peek() != JsonKind::array) bad(key, "a JSON list of strings");
    json.begin_array();
    while (json.next_element()) {
      if (json.peek() != JsonKind::string) bad(key, "a JSON list of strings");
      items.push_back(json.read_string());
    }
    json.expect_end();
    return items;
  }

 private:
  [[noreturn]] void bad(const std::string& key, std::string_view expected) const {
    fail(path_ + ": checkpoint metadata \"" + key + "\" is " + quoted_for_message(text(key)) +
         ", expected " + std::string(expected));
  }

  const std::map<std::string, std::string>& metadata_;
  const std::string& path_;
};

}  // namespace

std::map<std::string, std::string> encode_checkpoint_metadata(std::string_view arch,
                                                              int64_t num_classes,
                                                              const CheckpointState& state,
                                                              const Optimizer* optimizer) {
  std::map<std::string, std::string> m;
  m["format"] = kCheckpointFormat;
  m["format_version"] = std::to_string(kCheckpointFormatVersion);
  m["engine_version"] = kEngineVersion;
  m["arch"] = arch;
  m["num_classes"] = std::to_string(num_classes);
  m["epoch"] = std::to_string(state.epoch);
  m["step"] = std::to_string(state.step);
  m["sampler_epoch"] = std::to_string(state.sampler.epoch);
  m["sampler_index"] = std::to_string(state.sampler.index);
  m["classes"] = string_list_json(state.classes);
  m["image_size"] = std::to_string(state.image_size);
  m["normalize_mean"] = float_list_text(state.normalize_mean);
  m["normalize_std"] = float_list_text(state.normalize_std);
  m["seed"] = std::to_string(state.seed);
  for (const auto& [key, value] : state.extra)
    m[std::string(kExtraPrefix) + key] = value;
  if (optimizer != nullptr) {
    m["optimizer"] = optimizer->name();
    m["optimizer.started"] = bool_text(optimizer->started());
    for (const auto& [key, value] : optimizer->state_metadata())
      m["optimizer." + key] = value;
  }
  return m;
}

void decode_checkpoint_metadata(CheckpointInfo& info) {
  const MetadataDecoder d(info.metadata, info.path);
  if (!d.has("format")) return;
  if (d.text("format") != kCheckpointFormat) {
    fail(info.path + ": checkpoint metadata \"format\" is " + quoted_for_message(d.text("format")) +
         ", expected \"" + std::string(kCheckpointFormat) + "\"");
  }
  const int version = d.integer<int>("format_version", 0);
  if (version < 1 || version > kCheckpointFormatVersion) {
    fail(info.path + ": checkpoint format version " + std::to_string(version) + " (engine " +
         (d.has("engine_version") ? d.text("engine_version") : "?") +
         "); this engine reads versions 1 to " + std::to_string(kCheckpointFormatVersion));
  }
  info.engine_checkpoint = true;
  info.arch = d.text("arch");
  info.num_classes = d.required_integer<int64_t>("num_classes");
  CheckpointState& s = info.state;
  s.epoch = d.integer<int64_t>("epoch", 0);
  s.step = d.integer<int64_t>("step", 0);
  s.sampler.epoch = d.integer<int64_t>("sampler_epoch", 0);
  s.sampler.index = d.integer<int64_t>("sampler_index", 0);
  s.classes = d.strings("classes");
  s.image_size = d.integer<int64_t>("image_size", 0);
  s.normalize_mean = d.reals("normalize_mean");
  s.normalize_std = d.reals("normalize_std");
  s.seed = d.integer<uint64_t>("seed", 0);
  for (const auto& [key, value] : info.metadata) {
    if (key.starts_with(kExtraPrefix)) s.extra[key.substr(kExtraPrefix.size())] = value;
  }
  if (d.has("optimizer")) {
    const std::string name = d.text("optimizer");
    if (name != "sgd" && name != "adamw" && name != "lars") {
      fail(info.path + ": checkpoint metadata \"optimizer\" is " + quoted_for_message(name) +
           ", expected \"sgd\", \"adamw\" or \"lars\"");
    }
    info.optimizer = name;
    info.optimizer_started = d.flag("optimizer.started", false);
    if (name != "sgd") return;
    SgdConfig c;
    c.lr = d.real("optimizer.lr", c.lr);
    c.momentum = d.real("optimizer.momentum", c.momentum);
    c.dampening = d.real("optimizer.dampening", c.dampening);
    c.weight_decay = d.real("optimizer.weight_decay", c.weight_decay);
    c.nesterov = d.flag("optimizer.nesterov", c.nesterov);
    c.decay_norm_and_bias = d.flag("optimizer.decay_norm_and_bias", c.decay_norm_and_bias);
    info.optimizer_config = c;
  }
}

}  // namespace engine::nn
