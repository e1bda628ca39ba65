#include "tests/data/augment_golden.h"

#include <stdexcept>

#include "data/decode.h"

namespace engine::data::testing {

const std::vector<GoldenRecord>& augment_goldens() {
  static const auto records = read_golden("augment");
  return records;
}

RgbImage golden_png(const std::string& base64) {
  return decode_image(decode_base64(base64));
}

RgbImage augment_source(const std::string& name) {
  for (const GoldenRecord& r : golden_records(augment_goldens(), "source")) {
    if (r.fields.at(0) == name) return golden_png(r.fields.at(1));
  }
  throw std::runtime_error("no source image '" + name + "' in augment.golden");
}

int differing_bytes(const RgbImage& a, const RgbImage& b) {
  if (a.pixels.size() != b.pixels.size()) return -1;
  int count = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i)
    count += a.pixels[i] != b.pixels[i];
  return count;
}

}  // namespace engine::data::testing
