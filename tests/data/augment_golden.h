// The records of augment.golden (tools/make_augment_goldens.py) that several suites read.
#pragma once

#include <string>
#include <vector>

#include "data/image.h"
#include "tests/data/golden.h"

namespace engine::data::testing {

const std::vector<GoldenRecord>& augment_goldens();

// A PNG field decoded to pixels.
RgbImage golden_png(const std::string& base64);

// The named `source` image.
RgbImage augment_source(const std::string& name);

// How many bytes of two same-size images differ, for messages.
int differing_bytes(const RgbImage& a, const RgbImage& b);

}  // namespace engine::data::testing
