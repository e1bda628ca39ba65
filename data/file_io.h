// Reading a sample file whole into a reused buffer; failures are BadImageError (the sample is
// skipped), with the system's reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace engine::data {

// A sanity bound: no image in a training set is this large, and reading one would stall a
// worker for seconds.
inline constexpr uint64_t kDefaultMaxFileBytes = uint64_t{1} << 30;

// Replaces `bytes` with the contents of `path`. Throws BadImageError for a missing, unreadable,
// non-regular or larger-than-max_bytes file.
void read_file(const std::string& path, std::vector<uint8_t>& bytes,
               uint64_t max_bytes = kDefaultMaxFileBytes);

}  // namespace engine::data
