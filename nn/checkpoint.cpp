#include "nn/checkpoint.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "kernels/error.h"
#include "kernels/ops/copy.h"
#include "nn/checkpoint_metadata.h"
#include "nn/safetensors.h"
#include "nn/safetensors_internal.h"

namespace engine::nn {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian, and tensors are copied as host bytes");

// Names listed per kind of mismatch at most (a hostile header may hold a million names).
constexpr size_t kMaxNamesListed = 64;

// Where a tensor of the state_dict lives in the model.
enum class Source { parameter, buffer, counter, optimizer };

struct StateEntry {
  std::string name;
  Source source;
  int index;  // into parameters(), buffers() or counters()
  std::string dtype;
  Shape shape;              // torchvision's
  std::string buffer = {};  // Source::optimizer: the state's key ("momentum_buffer", ...)
};

bool is_filter(const ParameterInfo& p) {
  return p.kind == ParameterKind::conv_filter;
}

// KRSC [o, h, w, i] <-> OIHW [o, i, h, w] for a filter of KRSC shape `krsc`.
template <bool kToTorch>
void convert_filter(const float* from, const Shape& krsc, float* to) {
  const int64_t out = krsc[0], kh = krsc[1], kw = krsc[2], in = krsc[3];
  for (int64_t o = 0; o < out; ++o)
    for (int64_t h = 0; h < kh; ++h)
      for (int64_t w = 0; w < kw; ++w)
        for (int64_t i = 0; i < in; ++i) {
          const int64_t engine_at = ((o * kh + h) * kw + w) * in + i;
          const int64_t torch_at = ((o * in + i) * kh + h) * kw + w;
          if constexpr (kToTorch)
            to[torch_at] = from[engine_at];
          else
            to[engine_at] = from[torch_at];
        }
}

}  // namespace

Shape torch_shape(const ParameterInfo& p) {
  if (!is_filter(p)) return p.shape;
  return {p.shape[0], p.shape[3], p.shape[1], p.shape[2]};
}

std::vector<float> to_torch_layout(const ParameterInfo& p, const float* values) {
  std::vector<float> torch_order(static_cast<size_t>(p.numel()));
  if (is_filter(p))
    convert_filter<true>(values, p.shape, torch_order.data());
  else
    std::copy(values, values + p.numel(), torch_order.begin());
  return torch_order;
}

namespace {

std::string_view module_of(std::string_view name) {
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : name.substr(0, dot);
}

// The model's tensors in torchvision's state_dict order (each module's parameters, then its
// buffers and counter), then each optimizer buffer's, in parameter order.
std::vector<StateEntry> state_dict_layout(const ParameterSet& params,
                                          const std::vector<std::string>& optimizer_buffers) {
  const auto& ps = params.parameters();
  const auto& bs = params.buffers();
  const auto& cs = params.counters();
  std::vector<StateEntry> layout;
  std::vector<bool> buffer_listed(bs.size()), counter_listed(cs.size());
  const auto list_module_state = [&](std::string_view module) {
    for (size_t b = 0; b < bs.size(); ++b) {
      if (buffer_listed[b] || module_of(bs[b].name) != module) continue;
      buffer_listed[b] = true;
      layout.push_back({bs[b].name, Source::buffer, static_cast<int>(b), "F32", bs[b].shape});
    }
    for (size_t c = 0; c < cs.size(); ++c) {
      if (counter_listed[c] || module_of(cs[c].name) != module) continue;
      counter_listed[c] = true;
      layout.push_back({cs[c].name, Source::counter, static_cast<int>(c), "I64", {}});
    }
  };
  for (size_t p = 0; p < ps.size(); ++p) {
    layout.push_back(
        {ps[p].name, Source::parameter, static_cast<int>(p), "F32", torch_shape(ps[p])});
    const std::string_view module = module_of(ps[p].name);
    if (p + 1 == ps.size() || module_of(ps[p + 1].name) != module) list_module_state(module);
  }
  for (size_t b = 0; b < bs.size(); ++b)
    if (!buffer_listed[b]) list_module_state(module_of(bs[b].name));
  for (size_t c = 0; c < cs.size(); ++c)
    if (!counter_listed[c]) list_module_state(module_of(cs[c].name));
  for (const std::string& buffer : optimizer_buffers) {
    for (size_t p = 0; p < ps.size(); ++p) {
      layout.push_back({"optimizer." + buffer + "." + ps[p].name, Source::optimizer,
                        static_cast<int>(p), "F32", torch_shape(ps[p]), buffer});
    }
  }
  return layout;
}

std::string model_description(std::string_view arch, int64_t num_classes) {
  return std::string(arch) + " (" + std::to_string(num_classes) + " classes)";
}

std::string listed(std::string_view what, const std::vector<std::string>& names) {
  std::string text = std::string(what) + " (" + std::to_string(names.size()) + "): ";
  for (size_t i = 0; i < names.size() && i < kMaxNamesListed; ++i) {
    if (i > 0) text += ", ";
    text += names[i];
  }
  if (names.size() > kMaxNamesListed)
    text += ", ... (" + std::to_string(names.size() - kMaxNamesListed) + " more)";
  return text;
}

// For a plain state_dict: the zoo arch whose names the file holds exactly, and fc's rows.
void infer_model(const SafetensorsReader& reader, CheckpointInfo& info) {
  const SafetensorsEntry* fc = reader.find("fc.weight");
  if (fc != nullptr && fc->shape.size() == 2) info.num_classes = fc->shape[0];
  std::unordered_set<std::string_view> names;
  for (const SafetensorsEntry& e : reader.entries())
    if (!e.name.starts_with("optimizer.")) names.insert(e.name);
  for (const std::string& arch : resnet_arch_names()) {
    const ResNet candidate(arch, {.num_classes = std::max<int64_t>(info.num_classes, 1)});
    const std::vector<StateEntry> layout = state_dict_layout(candidate.params(), {});
    if (layout.size() == names.size() &&
        std::all_of(layout.begin(), layout.end(),
                    [&](const StateEntry& e) { return names.contains(e.name); })) {
      info.arch = arch;
      return;
    }
  }
}

bool holds_buffer(const CheckpointInfo& info, std::string_view buffer) {
  return std::find(info.optimizer_buffers.begin(), info.optimizer_buffers.end(), buffer) !=
         info.optimizer_buffers.end();
}

std::vector<std::string> all_optimizer_buffers() {
  return {std::begin(kOptimizerBuffers), std::end(kOptimizerBuffers)};
}

CheckpointInfo info_of(const SafetensorsReader& reader, const std::string& path) {
  CheckpointInfo info;
  info.path = path;
  info.metadata = reader.metadata();
  decode_checkpoint_metadata(info);
  if (!info.engine_checkpoint) infer_model(reader, info);
  for (std::string_view buffer : kOptimizerBuffers) {
    const std::string prefix = "optimizer." + std::string(buffer) + ".";
    if (std::any_of(reader.entries().begin(), reader.entries().end(),
                    [&](const auto& e) { return e.name.starts_with(prefix); })) {
      info.optimizer_buffers.emplace_back(buffer);
    }
  }
  info.has_momentum = holds_buffer(info, "momentum_buffer");
  return info;
}

// Every difference between the file's tensors and the model's, in one message.
// Whether a file's tensor is the classifier's (fc.weight, or optimizer.<state>.fc.bias, ...).
bool names_head(std::string_view name) {
  if (name.starts_with("optimizer.")) {
    name.remove_prefix(std::string_view("optimizer.").size());
    const size_t dot = name.find('.');
    if (dot == std::string_view::npos) return false;
    name.remove_prefix(dot + 1);
  }
  return module_of(name) == kHeadModule;
}

// `layout` is what the model expects; with `without_head` the file's classifier tensors are
// passed over and its class count is not compared.
void check_fits(const SafetensorsReader& reader, const CheckpointInfo& info, const ResNet& model,
                const std::vector<StateEntry>& layout, bool without_head = false) {
  std::unordered_map<std::string_view, const StateEntry*> expected;
  for (const StateEntry& e : layout)
    expected.emplace(e.name, &e);
  std::vector<std::string> wrong, missing, unexpected;
  std::unordered_set<std::string_view> present;
  for (const SafetensorsEntry& entry : reader.entries()) {
    if (without_head && names_head(entry.name)) continue;
    const auto found = expected.find(entry.name);
    if (found == expected.end()) {
      unexpected.push_back(quoted_for_message(entry.name));
      continue;
    }
    present.insert(entry.name);
    const StateEntry& want = *found->second;
    if (entry.dtype != want.dtype) {
      wrong.push_back(want.name + " is " + entry.dtype + " " + format_shape(entry.shape) +
                      ", expected " + want.dtype + " " + format_shape(want.shape));
    } else if (entry.shape != want.shape) {
      wrong.push_back(want.name + " is " + entry.dtype + " " + format_shape(entry.shape) +
                      ", expected " + format_shape(want.shape));
    }
  }
  for (const StateEntry& e : layout) {
    // Each optimizer buffer's tensors are all there or none is.
    if (e.source == Source::optimizer && !holds_buffer(info, e.buffer)) continue;
    if (!present.contains(e.name)) missing.push_back(e.name);
  }
  const int64_t classes = model.options().num_classes;
  const bool other_model = !info.arch.empty() && (info.arch != model.arch() ||
                                                  (info.num_classes != classes && !without_head));
  // Metadata naming another arch over tensors that fit would be a corrupt file: refuse it too.
  if (wrong.empty() && missing.empty() && unexpected.empty() && !other_model) return;
  std::string message = info.path + " does not fit " + model_description(model.arch(), classes);
  if (other_model) message += "; it holds " + model_description(info.arch, info.num_classes);
  if (!missing.empty()) wrong.push_back(listed("missing", missing));
  if (!unexpected.empty()) wrong.push_back(listed("unexpected", unexpected));
  for (size_t i = 0; i < wrong.size(); ++i) {
    message += i == 0 ? ": " : "; ";
    message += wrong[i];
  }
  fail(message);
}

std::span<std::byte> bytes_of(float* data, int64_t count) {
  return {reinterpret_cast<std::byte*>(data), static_cast<size_t>(count) * sizeof(float)};
}

// Reads an F32 tensor of torchvision's layout into `to`, in the engine's.
void read_values(const SafetensorsReader& reader, const SafetensorsEntry& entry,
                 const ParameterInfo* filter, float* to, int64_t count) {
  if (filter == nullptr) {
    reader.read(entry, bytes_of(to, count));
    return;
  }
  std::vector<float> torch_order(static_cast<size_t>(count));
  reader.read(entry, bytes_of(torch_order.data(), count));
  convert_filter<false>(torch_order.data(), filter->shape, to);
}

Tensor zeroed_host_twin(const Tensor& flat) {
  Tensor host = Tensor::empty(flat.shape(), DType::f32, Device::cpu());
  std::fill_n(host.data<float>(), host.numel(), 0.f);
  return host;
}

void save(const std::string& path, const ResNet& model, const Optimizer* optimizer,
          const CheckpointState& state, Stream& stream) {
  const ParameterSet& params = model.params();
  ENGINE_REQUIRE(params.allocated(),
                 "save_checkpoint(" + path + "): the " + model.arch() + " is not allocated");
  const std::vector<float> values = params.flat_values().to_floats(stream);
  const std::vector<float> buffers =
      params.buffers().empty() ? std::vector<float>() : params.flat_buffers().to_floats(stream);
  std::vector<std::string> buffer_names;
  std::map<std::string, std::vector<float>> optimizer_values;
  if (optimizer != nullptr) {
    for (const auto& [name, tensor] : optimizer->state_buffers()) {
      buffer_names.push_back(name);
      optimizer_values[name] = tensor->to_floats(stream);
    }
  }
  std::vector<int64_t> counters;
  for (const CounterInfo& c : params.counters())
    counters.push_back(c.value);

  const std::vector<StateEntry> layout = state_dict_layout(params, buffer_names);
  std::vector<std::vector<float>> converted;  // filters in OIHW; their data stays put
  std::vector<SafetensorsTensor> tensors;
  for (const StateEntry& e : layout) {
    const void* data = nullptr;
    if (e.source == Source::counter) {
      data = &counters[static_cast<size_t>(e.index)];
    } else if (e.source == Source::buffer) {
      data = buffers.data() + params.buffers()[static_cast<size_t>(e.index)].offset;
    } else {
      const ParameterInfo& p = params.parameters()[static_cast<size_t>(e.index)];
      const float* engine_order =
          (e.source == Source::optimizer ? optimizer_values.at(e.buffer) : values).data() +
          p.offset;
      if (is_filter(p)) {
        converted.push_back(to_torch_layout(p, engine_order));
        engine_order = converted.back().data();
      }
      data = engine_order;
    }
    tensors.push_back({e.name, e.dtype, e.shape, data});
  }
  write_safetensors(
      path, tensors,
      encode_checkpoint_metadata(model.arch(), model.options().num_classes, state, optimizer));
}

}  // namespace

void save_checkpoint(const std::string& path, const ResNet& model, const CheckpointState& state,
                     Stream& stream) {
  save(path, model, nullptr, state, stream);
}

void save_checkpoint(const std::string& path, const ResNet& model, const Optimizer& optimizer,
                     const CheckpointState& state, Stream& stream) {
  save(path, model, &optimizer, state, stream);
}

CheckpointInfo read_checkpoint_info(const std::string& path) {
  return info_of(SafetensorsReader::open(path), path);
}

std::string checkpoint_arch(const std::string& path) {
  const CheckpointInfo info = read_checkpoint_info(path);
  if (info.arch.empty()) {
    std::string choices;
    for (const std::string& name : resnet_arch_names()) {
      if (!choices.empty()) choices += ", ";
      choices += name;
    }
    fail(path + ": neither its metadata nor its tensor names identify a ResNet (" + choices + ")");
  }
  return info.arch;
}

LoadedCheckpoint load_checkpoint(const std::string& path, ResNet& model, Stream& stream,
                                 const LoadOptions& options) {
  ParameterSet& params = model.params();
  ENGINE_REQUIRE(params.allocated(),
                 "load_checkpoint(" + path + "): the " + model.arch() + " is not allocated");
  const SafetensorsReader reader = SafetensorsReader::open(path);
  LoadedCheckpoint loaded{info_of(reader, path), {}};
  std::vector<StateEntry> layout = state_dict_layout(params, all_optimizer_buffers());
  loaded.new_head = options.new_head && loaded.info.num_classes != model.options().num_classes;
  if (loaded.new_head) {
    std::erase_if(layout, [](const StateEntry& e) { return names_head(e.name); });
  }
  check_fits(reader, loaded.info, model, layout, loaded.new_head);

  // Everything is read into host memory first, so a read error leaves the model untouched;
  // a new head keeps the model's own values, which the file's then overwrite elsewhere.
  Tensor values = zeroed_host_twin(params.flat_values());
  if (loaded.new_head) {
    copy(params.flat_values(), values, stream);
    stream.synchronize();
  }
  Tensor buffers = params.buffers().empty() ? Tensor() : zeroed_host_twin(params.flat_buffers());
  for (const std::string& buffer : loaded.info.optimizer_buffers)
    loaded.optimizer_buffers[buffer].assign(static_cast<size_t>(values.numel()), 0.f);
  std::vector<int64_t> counters(params.counters().size());
  for (const StateEntry& e : layout) {
    if (e.source == Source::optimizer && !holds_buffer(loaded.info, e.buffer)) continue;
    const SafetensorsEntry& entry = reader.at(e.name);
    const auto index = static_cast<size_t>(e.index);
    if (e.source == Source::counter) {
      reader.read(entry, {reinterpret_cast<std::byte*>(&counters[index]), sizeof(int64_t)});
    } else if (e.source == Source::buffer) {
      const BufferInfo& b = params.buffers()[index];
      read_values(reader, entry, nullptr, buffers.data<float>() + b.offset, shape_numel(b.shape));
    } else {
      const ParameterInfo& p = params.parameters()[index];
      float* to = e.source == Source::optimizer ? loaded.optimizer_buffers[e.buffer].data()
                                                : values.data<float>();
      read_values(reader, entry, is_filter(p) ? &p : nullptr, to + p.offset, p.numel());
    }
  }
  copy(values, params.flat_values(), stream);
  if (buffers.defined()) copy(buffers, params.flat_buffers(), stream);
  stream.synchronize();  // the host copies die here
  for (size_t c = 0; c < counters.size(); ++c)
    params.counter(static_cast<CounterId>(c)) = counters[c];
  return loaded;
}

void load_optimizer_state(const LoadedCheckpoint& checkpoint, Optimizer& optimizer,
                          Stream& stream) {
  const CheckpointInfo& info = checkpoint.info;
  // A plain state_dict (no optimizer) starts any optimizer afresh; an old engine checkpoint
  // always names "sgd".
  if (!info.optimizer.empty() && info.optimizer != optimizer.name()) {
    fail(info.path + ": the checkpoint holds the state of optimizer " + info.optimizer +
         ", this run's is " + std::string(optimizer.name()) + " (resume with --opt " +
         info.optimizer + ")");
  }
  OptimizerState state;
  state.started = info.optimizer_started;
  state.buffers = checkpoint.optimizer_buffers;
  for (const auto& [key, value] : info.metadata)
    if (key.starts_with("optimizer.")) state.metadata[key.substr(10)] = value;
  optimizer.load_state(state, stream);
  stream.synchronize();
}

}  // namespace engine::nn
