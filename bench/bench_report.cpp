#include "bench/bench_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

namespace engine::bench {

namespace {
// A name or note as a JSON string, escaped as JSON requires (control characters too).
std::string json_string(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string number(double value) {
  std::ostringstream text;
  text.precision(6);
  text << value;
  return text.str();
}
}  // namespace

std::vector<Row> fastest_of_rounds(const std::vector<std::vector<Row>>& rounds) {
  if (rounds.empty()) return {};
  std::vector<Row> best = rounds.front();
  for (size_t r = 1; r < rounds.size(); ++r) {
    for (size_t i = 0; i < best.size() && i < rounds[r].size(); ++i) {
      Row& row = best[i];
      const Row& other = rounds[r][i];
      if (other.time_us > 0 && other.time_us < row.time_us) {
        // Throughputs scale with 1 / time.
        const double speedup = row.time_us / other.time_us;
        if (row.gflops) *row.gflops *= speedup;
        if (row.gbps) *row.gbps *= speedup;
        if (row.images_per_s) *row.images_per_s *= speedup;
        row.time_us = other.time_us;
      }
      if (other.baseline_time_us &&
          (!row.baseline_time_us || *other.baseline_time_us < *row.baseline_time_us)) {
        row.baseline_time_us = other.baseline_time_us;
        row.note = other.note;
      }
    }
  }
  return best;
}

std::string to_json(const Row& row) {
  std::string json = "{\"bench\":" + json_string(row.bench) + ",\"impl\":" + json_string(row.impl) +
                     ",\"case\":" + json_string(row.case_name) +
                     ",\"time_us\":" + number(row.time_us);
  if (row.bytes) json += ",\"bytes\":" + std::to_string(*row.bytes);
  if (row.gflops) json += ",\"gflops\":" + number(*row.gflops);
  if (row.gbps) json += ",\"gbps\":" + number(*row.gbps);
  if (row.images_per_s) json += ",\"images_per_s\":" + number(*row.images_per_s);
  if (row.kernel_launches) json += ",\"kernel_launches\":" + std::to_string(*row.kernel_launches);
  if (row.graph_nodes) json += ",\"graph_nodes\":" + std::to_string(*row.graph_nodes);
  if (!row.baseline.empty()) {
    json += ",\"baseline\":" + json_string(row.baseline);
    if (row.baseline_time_us) json += ",\"baseline_time_us\":" + number(*row.baseline_time_us);
    if (auto r = row.ratio()) json += ",\"ratio\":" + number(*r);
  }
  if (!row.note.empty()) json += ",\"note\":" + json_string(row.note);
  return json + "}";
}

void print_table(const std::vector<Row>& rows) {
  std::printf("%-44s %-8s %12s %10s %10s %-8s %12s %7s\n", "case", "impl", "time_us", "GFLOP/s",
              "GB/s", "baseline", "base_us", "ratio");
  for (const Row& row : rows) {
    auto optional_number = [](const std::optional<double>& value, const char* format) {
      char text[32] = "-";
      if (value) std::snprintf(text, sizeof(text), format, *value);
      return std::string(text);
    };
    std::printf("%-44s %-8s %12.1f %10s %10s %-8s %12s %7s%s%s\n", row.case_name.c_str(),
                row.impl.c_str(), row.time_us, optional_number(row.gflops, "%.1f").c_str(),
                optional_number(row.gbps, "%.1f").c_str(),
                row.baseline.empty() ? "-" : row.baseline.c_str(),
                optional_number(row.baseline_time_us, "%.1f").c_str(),
                optional_number(row.ratio(), "%.2f").c_str(), row.note.empty() ? "" : "  ",
                row.note.c_str());
  }
}

std::optional<double> geometric_mean_ratio(const std::vector<Row>& rows) {
  double log_sum = 0;
  int count = 0;
  for (const Row& row : rows) {
    if (auto r = row.ratio()) {
      log_sum += std::log(*r);
      ++count;
    }
  }
  if (count == 0) return std::nullopt;
  return std::exp(log_sum / count);
}

}  // namespace engine::bench
