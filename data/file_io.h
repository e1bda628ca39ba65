// Reading a sample file whole into a reused buffer, and decoding one by path. Failures are
// BadImageError naming the file (the sample is skipped), with the system's or decoder's reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/decode.h"
#include "data/image.h"

namespace engine::data {

// A sanity bound: no image in a training set is this large, and reading one would stall a
// worker for seconds.
inline constexpr uint64_t kDefaultMaxFileBytes = uint64_t{1} << 30;

// Replaces `bytes` with the contents of `path`. Throws BadImageError for a missing, unreadable,
// non-regular or larger-than-max_bytes file.
void read_file(const std::string& path, std::vector<uint8_t>& bytes,
               uint64_t max_bytes = kDefaultMaxFileBytes);

// read_file, then a full-size decode into `image`; `bytes` and `image` are reused buffers. For
// tools that walk a folder without the loader's transforms (bench_data's decode figure).
void decode_image_file(const std::string& path, std::vector<uint8_t>& bytes, RgbImage& image,
                       const DecodeLimits& limits = {});

}  // namespace engine::data
