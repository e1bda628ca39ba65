// JPEG through libjpeg-turbo's libjpeg API. Decoding settings equal PIL's (accurate integer
// IDCT, fancy upsampling), so pixels match torchvision's loader bit for bit. Two shortcuts keep
// them equal while doing less work:
//   - a region: rows above it are skipped (entropy decoding only), rows below it are never
//     decoded, and columns outside it skip the IDCT and color conversion (jpeg_crop_scanline);
//     the region is widened by a margin so that fancy upsampling at its edges sees the same
//     neighbours as in a full decode;
//   - a scale below 8/8 selects libjpeg's scaled IDCT (DCT-domain downscaling).
// libjpeg reports errors through longjmp, so the function that calls it holds no object with a
// destructor between setjmp and the end of decoding.
#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <jerror.h>
#include <jpeglib.h>

#include "data/decoders.h"

namespace engine::data::decoders {

namespace {

// Progressive files with hundreds of scans are a CPU bomb; TurboJPEG stops at the same count.
constexpr int kMaxScans = 500;
// Pixels decoded beyond each side of a region: fancy upsampling reads one chroma sample past a
// pixel, i.e. up to 2 pixels (4 with 4:1:1 subsampling); 8 leaves room.
constexpr int kRegionMargin = 8;

struct ErrorState {
  jpeg_error_mgr manager;  // first: libjpeg hands &manager back as cinfo->err
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;
  bool too_many_scans;
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* state = reinterpret_cast<ErrorState*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, state->message);
  std::longjmp(state->jump, 1);
}

// Warnings: PIL accepts most (extraneous bytes before a marker, ...) but refuses a truncated file.
void on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  auto* state = reinterpret_cast<ErrorState*>(cinfo->err);
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) state->truncated = true;
  ++cinfo->err->num_warnings;
}

void on_progress(j_common_ptr cinfo) {
  auto* decompress = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (decompress->input_scan_number > kMaxScans) {
    auto* state = reinterpret_cast<ErrorState*>(cinfo->err);
    state->too_many_scans = true;
    std::longjmp(state->jump, 1);
  }
}

void init_decompress(jpeg_decompress_struct& cinfo, ErrorState& errors) {
  cinfo.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = on_error;
  errors.manager.emit_message = on_message;
  errors.message[0] = '\0';
  errors.truncated = false;
  errors.too_many_scans = false;
}

struct Request {
  int scale_eighths = 8;
  DecodeRegion region;  // empty: the whole image
};

struct Outcome {
  int status = 0;  // 0 ok, 1 libjpeg error, 2 truncated, 3 too many scans
  int width = 0;   // header size (read_header_only) or decoded size
  int height = 0;
  ImageOrigin origin;
};

// The only function between setjmp and longjmp: its locals are trivially destructible, and
// `pixels` (owned by the caller) only grows inside. When `pixels` is null only the header is read.
Outcome run_libjpeg(const uint8_t* data, size_t size, const Request& request,
                    std::vector<uint8_t>* pixels, std::vector<uint8_t>* cmyk_row,
                    ErrorState& errors) {
  jpeg_decompress_struct cinfo;
  jpeg_progress_mgr progress;
  Outcome outcome;
  init_decompress(cinfo, errors);
  if (setjmp(errors.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    outcome.status = errors.too_many_scans ? 3 : 1;
    return outcome;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  outcome.width = static_cast<int>(cinfo.image_width);
  outcome.height = static_cast<int>(cinfo.image_height);
  if (pixels == nullptr) {
    jpeg_destroy_decompress(&cinfo);
    return outcome;
  }
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  cinfo.scale_num = static_cast<unsigned>(request.scale_eighths);
  cinfo.scale_denom = 8;
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = TRUE;
  progress.progress_monitor = on_progress;
  cinfo.progress = &progress;
  jpeg_start_decompress(&cinfo);

  const int full_width = static_cast<int>(cinfo.output_width);
  const int full_height = static_cast<int>(cinfo.output_height);
  int left = 0;
  int top = 0;
  int right = full_width;
  int bottom = full_height;
  if (request.region.width > 0 && request.region.height > 0) {
    left = std::clamp(request.region.left - kRegionMargin, 0, full_width);
    right =
        std::clamp(request.region.left + request.region.width + kRegionMargin, left, full_width);
    top = std::clamp(request.region.top - kRegionMargin, 0, full_height);
    bottom =
        std::clamp(request.region.top + request.region.height + kRegionMargin, top, full_height);
  }
  if (left > 0 || right < full_width) {
    auto x = static_cast<JDIMENSION>(left);
    auto width = static_cast<JDIMENSION>(right - left);
    jpeg_crop_scanline(&cinfo, &x, &width);  // moves left to an iMCU boundary
    left = static_cast<int>(x);
    right = left + static_cast<int>(width);
  }
  const int width = right - left;
  pixels->resize(static_cast<size_t>(width) * static_cast<size_t>(bottom - top) * 3);
  if (cmyk) cmyk_row->resize(static_cast<size_t>(width) * 4);
  if (top > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(top));
  while (static_cast<int>(cinfo.output_scanline) < bottom) {
    uint8_t* row = pixels->data() + (cinfo.output_scanline - top) * static_cast<size_t>(width) * 3;
    JSAMPROW target = cmyk ? cmyk_row->data() : row;
    jpeg_read_scanlines(&cinfo, &target, 1);
    if (cmyk) {
      // PIL reads every CMYK JPEG as Adobe-inverted ("CMYK;I"), then converts to RGB.
      for (int x = 0; x < width; ++x) {
        const uint8_t* ink = &(*cmyk_row)[static_cast<size_t>(x) * 4];
        const auto black = static_cast<uint8_t>(255 - ink[3]);
        for (int c = 0; c < 3; ++c) {
          row[x * 3 + c] = cmyk_channel_to_rgb(static_cast<uint8_t>(255 - ink[c]), black);
        }
      }
    }
  }
  if (static_cast<int>(cinfo.output_scanline) == full_height) {
    jpeg_finish_decompress(&cinfo);
  } else {
    jpeg_abort_decompress(&cinfo);
  }
  jpeg_destroy_decompress(&cinfo);
  outcome.status = errors.truncated ? 2 : 0;
  outcome.width = width;
  outcome.height = bottom - top;
  outcome.origin = {left, top};
  return outcome;
}

[[noreturn]] void throw_failure(const Outcome& outcome, const ErrorState& errors,
                                const char* what) {
  if (outcome.status == 2) throw BadImageError("truncated JPEG: Premature end of JPEG file");
  if (outcome.status == 3) {
    throw BadImageError("progressive JPEG with more than " + std::to_string(kMaxScans) + " scans");
  }
  throw BadImageError(std::string(what) + ": " + errors.message);
}

// A region decode stops before the end of the file and would not notice a truncated one, so
// it is only taken when the file ends with an EOI marker (allowing some trailing padding).
bool ends_with_eoi(std::span<const uint8_t> bytes) {
  const size_t window = std::min<size_t>(bytes.size(), 1024);
  for (size_t i = bytes.size() - window; i + 1 < bytes.size(); ++i) {
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xD9) return true;
  }
  return false;
}

}  // namespace

ImageHeader read_jpeg_header(std::span<const uint8_t> bytes) {
  ErrorState errors;
  const Outcome outcome = run_libjpeg(bytes.data(), bytes.size(), {}, nullptr, nullptr, errors);
  if (outcome.status != 0) throw_failure(outcome, errors, "corrupt JPEG header");
  return {ImageFormat::jpeg, outcome.width, outcome.height};
}

ImageOrigin decode_jpeg(std::span<const uint8_t> bytes, int scale_eighths,
                        const DecodeRegion& region, RgbImage& image) {
  thread_local std::vector<uint8_t> cmyk_row;
  Request request{scale_eighths, ends_with_eoi(bytes) ? region : DecodeRegion{}};
  ErrorState errors;
  const Outcome outcome =
      run_libjpeg(bytes.data(), bytes.size(), request, &image.pixels, &cmyk_row, errors);
  if (outcome.status != 0) throw_failure(outcome, errors, "corrupt JPEG data");
  image.width = outcome.width;
  image.height = outcome.height;
  return outcome.origin;
}

}  // namespace engine::data::decoders
