#include "kernels/conv_plans.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <vector>

#include "kernels/error.h"

namespace engine {

namespace {

// Format 3 adds the padding column (ChannelPadding) after epilogue, format 2 the fusion column
// (ConvFusion) after math; rows of formats 1 (plain passes) and 2 are still read, their
// padding the heuristic's.
constexpr std::string_view kFormat = "3";
constexpr size_t kRowFields = 22;

// Which columns a row of a format has.
struct RowLayout {
  bool fusion = true;
  bool padding = true;
  size_t fields() const { return kRowFields - !fusion - !padding; }
};
std::optional<RowLayout> row_layout(std::string_view format) {
  if (format == "1") return RowLayout{.fusion = false, .padding = false};
  if (format == "2") return RowLayout{.fusion = true, .padding = false};
  if (format == kFormat) return RowLayout{};
  return std::nullopt;
}

constexpr std::pair<std::string_view, DType> kDtypes[] = {{"f32", DType::f32},
                                                          {"bf16", DType::bf16}};

std::optional<DType> parse_conv_dtype(std::string_view text) {
  for (const auto& [name, dtype] : kDtypes) {
    if (name == text) return dtype;
  }
  return std::nullopt;
}

std::optional<Fp32Math> parse_fp32_math(std::string_view text) {
  if (text == fp32_math_name(Fp32Math::exact)) return Fp32Math::exact;
  if (text == fp32_math_name(Fp32Math::tf32)) return Fp32Math::tf32;
  return std::nullopt;
}

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
    if (tab == std::string_view::npos) return fields;
    start = tab + 1;
  }
}

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_double(std::string_view text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value < 0) {
    return std::nullopt;
  }
  return value;
}

// The row's problem and entry, or a description of what is wrong with it.
std::string parse_row(std::vector<std::string_view> f, const RowLayout& layout,
                      ConvProblem& problem, ConvPlanEntry& entry) {
  const size_t expected = layout.fields();
  if (f.size() != expected) {
    return "expected " + std::to_string(expected) + " tab-separated fields, got " +
           std::to_string(f.size());
  }
  const auto pass = parse_conv_pass(f[0]);
  const auto dtype = parse_conv_dtype(f[1]);
  const auto math = parse_fp32_math(f[2]);
  if (!pass || !dtype || !math)
    return "unknown pass, dtype or math '" + std::string(f[0]) + " " + std::string(f[1]) + " " +
           std::string(f[2]) + "'";
  problem.pass = *pass;
  problem.dtype = *dtype;
  problem.math = *math;
  if (layout.fusion) {
    const auto fusion = parse_conv_fusion(f[3]);
    if (!fusion) return "unknown fusion '" + std::string(f[3]) + "'";
    problem.fusion = *fusion;
    f.erase(f.begin() + 3);  // the rest as in format 1
  }
  if (layout.padding) {
    const auto padding = parse_channel_padding(f[19]);
    if (!padding) return "unknown padding '" + std::string(f[19]) + "'";
    entry.algo.padding = *padding;
    f.erase(f.begin() + 19);  // microseconds where format 1 has it
  }
  const size_t shift = layout.fusion ? 1 : 0;  // of the fields' numbers in messages
  int64_t* extents[] = {
      &problem.shape.batch,       &problem.shape.in_h,         &problem.shape.in_w,
      &problem.shape.in_channels, &problem.shape.out_channels, &problem.shape.kernel_h,
      &problem.shape.kernel_w,    &problem.shape.stride_h,     &problem.shape.stride_w,
      &problem.shape.pad_h,       &problem.shape.pad_w,        &problem.shape.dilation_h,
      &problem.shape.dilation_w};
  for (size_t i = 0; i < std::size(extents); ++i) {
    const auto value = parse_int(f[3 + i]);
    if (!value)
      return "field " + std::to_string(4 + shift + i) + " '" + std::string(f[3 + i]) +
             "' is not an integer";
    *extents[i] = *value;
  }
  try {
    problem.shape.validate();
  } catch (const Error& e) {
    return e.what();
  }
  const auto tile = parse_gemm_tile(f[16]);
  const auto split = parse_int(f[17]);
  const auto epilogue = parse_gemm_epilogue(f[18]);
  const auto microseconds = parse_double(f[19]);
  if (!tile || !split || *split < 0 || *split > 4096 || !epilogue || !microseconds) {
    return "bad algorithm '" + std::string(f[16]) + " " + std::string(f[17]) + " " +
           std::string(f[18]) + " " + std::string(f[19]) + "'";
  }
  entry.algo.gemm.tile = *tile;
  entry.algo.split_k = static_cast<int>(*split);
  entry.algo.gemm.epilogue = *epilogue;
  entry.microseconds = *microseconds;
  return "";
}

}  // namespace

const ConvPlanEntry* ConvPlans::find(const ConvProblem& problem) const {
  const auto it = entries_.find(problem);
  return it == entries_.end() ? nullptr : &it->second;
}

ConvAlgo ConvPlans::algo_for(const ConvProblem& problem) const {
  const ConvPlanEntry* entry = find(problem);
  return entry == nullptr ? ConvAlgo{} : entry->algo;
}

std::string conv_plans_text(const ConvPlans& plans, const ConvPlanOrigin& origin) {
  std::ostringstream out;
  out << "# Convolution algorithms, the fastest of the candidates timed per problem "
         "(nn/conv_tuner.h).\n"
      << "# Delete the file to time them again; kernels/conv_plans.h describes the format.\n"
      << "format\t" << kFormat << "\ngpu\t" << origin.gpu << "\ncuda\t" << origin.cuda
      << "\nkernels\t" << origin.kernels << "\n"
      << "# "
         "pass\tdtype\tmath\tfusion\tbatch\tin_h\tin_w\tin_c\tout_c\tkernel_h\tkernel_w\tstride_h\t"
         "stride_w\tpad_h\tpad_w\tdilation_h\tdilation_w\ttile\tsplit\tepilogue\tpadding\t"
         "microseconds\n";
  for (const auto& [p, entry] : plans.entries()) {
    const Conv2dShape& s = p.shape;
    out << conv_pass_name(p.pass) << '\t' << dtype_name(p.dtype) << '\t' << fp32_math_name(p.math)
        << '\t' << conv_fusion_name(p.fusion);
    for (const int64_t v :
         {s.batch, s.in_h, s.in_w, s.in_channels, s.out_channels, s.kernel_h, s.kernel_w,
          s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dilation_h, s.dilation_w}) {
      out << '\t' << v;
    }
    char microseconds[32];
    std::snprintf(microseconds, sizeof microseconds, "%.1f", entry.microseconds);
    out << '\t' << gemm_tile_name(entry.algo.gemm.tile) << '\t' << entry.algo.split_k << '\t'
        << gemm_epilogue_name(entry.algo.gemm.epilogue) << '\t'
        << channel_padding_name(entry.algo.padding) << '\t' << microseconds << '\n';
  }
  return out.str();
}

ParsedConvPlans parse_conv_plans(std::string_view text, std::string_view source) {
  ParsedConvPlans parsed;
  std::optional<RowLayout> layout;  // from the format header
  int line_number = 0;
  const auto bad = [&](const std::string& why) {
    fail(std::string(source) + ":" + std::to_string(line_number) + ": " + why);
  };
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> fields = split_tabs(line);
    if (fields.size() == 2) {
      const std::string value(fields[1]);
      if (fields[0] == "format") {
        layout = row_layout(fields[1]);
        if (!layout) bad("format " + value + ", this build reads formats 1 to 3");
      } else if (fields[0] == "gpu") {
        parsed.origin.gpu = value;
      } else if (fields[0] == "cuda") {
        parsed.origin.cuda = value;
      } else if (fields[0] == "kernels") {
        parsed.origin.kernels = value;
      } else {
        bad("unknown header '" + std::string(fields[0]) + "'");
      }
      continue;
    }
    if (!layout) bad("a row before the 'format' header");
    ConvProblem problem;
    ConvPlanEntry entry;
    const std::string why = parse_row(fields, *layout, problem, entry);
    if (!why.empty()) bad(why);
    if (parsed.plans.find(problem) != nullptr) bad("a second row for " + problem.str());
    parsed.plans.set(problem, entry);
  }
  if (!layout) fail(std::string(source) + ": not a convolution plan table (no 'format' row)");
  return parsed;
}

}  // namespace engine
