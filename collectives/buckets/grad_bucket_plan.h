// How a flat gradient buffer is cut into all-reduce buckets (PyTorch DDP's rule): walking the
// gradient ranges in the order backward finishes them, a bucket takes ranges while its span
// stays within the cap, the first bucket with a small cap (1 MiB) so communication starts
// early in backward, the others with bucket_cap_bytes (25 MiB) so each all-reduce is large
// enough to run at full bandwidth. A range larger than the cap gets a bucket of its own.
//
// Buckets are contiguous and together cover the whole buffer: a bucket spans from its first
// range's offset (0 for the first bucket) to the next bucket's start (the buffer's end for
// the last), so the alignment gaps between ranges travel with the bucket before them. The
// gaps hold zeros on every rank, so any average leaves them zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace engine {

// One gradient in the flat buffer, in elements.
struct GradRange {
  int64_t offset = 0;
  int64_t numel = 0;
  std::string name;  // for error messages; "" reads as "range <index>"
};

struct GradBucket {
  int64_t offset = 0;  // elements, into the flat buffer
  int64_t numel = 0;   // elements, gaps included
  int first_range = 0;
  int range_count = 0;
};

// Buckets for ranges sorted by offset, non-overlapping, inside [0, total_elements). Throws
// engine::Error naming the range that breaks this, or a cap that is not positive.
std::vector<GradBucket> plan_grad_buckets(const std::vector<GradRange>& ranges,
                                          int64_t total_elements, size_t element_bytes,
                                          int64_t first_bucket_bytes, int64_t bucket_cap_bytes);

// "range 3 (layer1.0.conv1.weight)" or "range 3".
std::string grad_range_label(const std::vector<GradRange>& ranges, int index);

}  // namespace engine
