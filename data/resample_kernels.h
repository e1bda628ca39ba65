// The inner loops of the resampler (internal to data/): the horizontal pass over a row range
// and the vertical pass, with PIL's fixed-point arithmetic. Vector versions give the same
// integers as the scalar ones; they are picked at run time by what the CPU supports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/image.h"
#include "data/resample.h"

namespace engine::data::resample_kernels {

// Rows [row_begin, row_end) of `source` -> packed RGB rows of axis.first.size() pixels.
// fixed_taps: every output pixel reads exactly axis.taps inputs (pad_to_fixed_taps ran).
void horizontal(const ResampleAxis& axis, bool fixed_taps, const RgbView& source, int row_begin,
                int row_end, uint8_t* out, size_t out_stride);

// Output row y = sum over taps of rows.row(axis.first[y] + t) * weight, out_width pixels each.
void vertical(const ResampleAxis& axis, const RgbView& rows, int out_width, uint8_t* out,
              size_t out_stride, std::vector<int32_t>& accumulator);

}  // namespace engine::data::resample_kernels
