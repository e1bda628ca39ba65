// TIFF through libtiff, reading from memory; only the first directory (page), as PIL does.
// Stripped 8/16-bit RGB and grayscale images (the common case) are read row by row, which keeps
// PIL's conversions: extra samples such as alpha are dropped, not premultiplied; 16-bit gray
// clips at 255 (PIL's "I;16" mode) and 16-bit RGB keeps the high byte. Everything else (tiles,
// palette, YCbCr, CMYK, 1-bit, separate planes) goes through TIFFReadRGBAImage.
#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "data/decoders.h"

namespace engine::data::decoders {

namespace {

// The bytes libtiff reads through its client callbacks.
struct MemoryFile {
  std::span<const uint8_t> bytes;
  toff_t position = 0;
};

tmsize_t read_memory(thandle_t handle, void* buffer, tmsize_t size) {
  auto* file = static_cast<MemoryFile*>(handle);
  if (size <= 0 || file->position >= file->bytes.size()) return 0;
  const auto available = static_cast<tmsize_t>(file->bytes.size() - file->position);
  const tmsize_t count = std::min(size, available);
  std::memcpy(buffer, file->bytes.data() + file->position, static_cast<size_t>(count));
  file->position += static_cast<toff_t>(count);
  return count;
}

tmsize_t write_nothing(thandle_t, void*, tmsize_t) {
  return 0;
}

toff_t seek_memory(thandle_t handle, toff_t offset, int whence) {
  auto* file = static_cast<MemoryFile*>(handle);
  toff_t base = 0;
  if (whence == SEEK_CUR) base = file->position;
  if (whence == SEEK_END) base = file->bytes.size();
  file->position = base + offset;  // reads past the end return 0 bytes
  return file->position;
}

int close_nothing(thandle_t) {
  return 0;
}
toff_t memory_size(thandle_t handle) {
  return static_cast<MemoryFile*>(handle)->bytes.size();
}
int map_nothing(thandle_t, void**, toff_t*) {
  return 0;
}
void unmap_nothing(thandle_t, void*, toff_t) {}

// libtiff's default handlers print to stderr; keep the first error as the skip reason instead.
int remember_error(TIFF*, void* user_data, const char* module, const char* format, va_list args) {
  auto* message = static_cast<std::string*>(user_data);
  if (message->empty()) {
    char text[512];
    std::vsnprintf(text, sizeof(text), format, args);
    *message = std::string(module != nullptr ? module : "libtiff") + ": " + text;
  }
  return 1;
}

int ignore_warning(TIFF*, void*, const char*, const char*, va_list) {
  return 1;
}

// Allocations libtiff makes for one strip or tile; larger requests mean a corrupt or hostile file.
constexpr tmsize_t kMaxSingleAllocation = tmsize_t{1} << 30;

struct TiffClose {
  void operator()(TIFF* tiff) const { TIFFClose(tiff); }
};

class OpenTiff {
 public:
  explicit OpenTiff(std::span<const uint8_t> bytes) : file_{bytes} {
    std::unique_ptr<TIFFOpenOptions, void (*)(TIFFOpenOptions*)> options(TIFFOpenOptionsAlloc(),
                                                                         TIFFOpenOptionsFree);
    TIFFOpenOptionsSetErrorHandlerExtR(options.get(), remember_error, &error_);
    TIFFOpenOptionsSetWarningHandlerExtR(options.get(), ignore_warning, nullptr);
    TIFFOpenOptionsSetMaxSingleMemAlloc(options.get(), kMaxSingleAllocation);
    tiff_.reset(TIFFClientOpenExt("memory", "rm", &file_, read_memory, write_nothing, seek_memory,
                                  close_nothing, memory_size, map_nothing, unmap_nothing,
                                  options.get()));
    if (tiff_ == nullptr) fail_with("corrupt TIFF header");
  }

  TIFF* get() const { return tiff_.get(); }
  [[noreturn]] void fail_with(const std::string& what) const {
    throw BadImageError(what + (error_.empty() ? "" : ": " + error_));
  }

 private:
  MemoryFile file_;
  std::string error_;
  std::unique_ptr<TIFF, TiffClose> tiff_;
};

ImageHeader header_of(const OpenTiff& tiff) {
  uint32_t width = 0;
  uint32_t height = 0;
  if (TIFFGetField(tiff.get(), TIFFTAG_IMAGEWIDTH, &width) != 1 ||
      TIFFGetField(tiff.get(), TIFFTAG_IMAGELENGTH, &height) != 1) {
    tiff.fail_with("TIFF without image width or length");
  }
  if (width > static_cast<uint32_t>(INT32_MAX) || height > static_cast<uint32_t>(INT32_MAX)) {
    tiff.fail_with("TIFF dimensions out of range");
  }
  return {ImageFormat::tiff, static_cast<int>(width), static_cast<int>(height)};
}

struct SampleLayout {
  uint16_t bits = 0;
  uint16_t samples = 0;
  uint16_t photometric = 0;
  uint16_t planar = PLANARCONFIG_CONTIG;
};

SampleLayout layout_of(TIFF* tiff) {
  SampleLayout layout;
  TIFFGetFieldDefaulted(tiff, TIFFTAG_BITSPERSAMPLE, &layout.bits);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_SAMPLESPERPIXEL, &layout.samples);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_PLANARCONFIG, &layout.planar);
  if (TIFFGetField(tiff, TIFFTAG_PHOTOMETRIC, &layout.photometric) != 1)
    layout.photometric = 0xFFFF;
  return layout;
}

bool reads_by_rows(TIFF* tiff, const SampleLayout& layout) {
  const bool rgb = layout.photometric == PHOTOMETRIC_RGB && layout.samples >= 3;
  const bool gray = layout.photometric == PHOTOMETRIC_MINISBLACK && layout.samples >= 1;
  return TIFFIsTiled(tiff) == 0 && layout.planar == PLANARCONFIG_CONTIG &&
         (layout.bits == 8 || layout.bits == 16) && (rgb || gray);
}

uint8_t to_8_bits(const uint8_t* row, size_t sample, int bits, bool gray) {
  if (bits == 8) return row[sample];
  uint16_t value;
  std::memcpy(&value, row + sample * 2, 2);  // libtiff has swapped it to host order
  return static_cast<uint8_t>(gray ? std::min<uint16_t>(value, 255) : value >> 8);
}

void read_rows(const OpenTiff& tiff, const SampleLayout& layout, RgbImage& image) {
  thread_local std::vector<uint8_t> row;
  row.resize(static_cast<size_t>(TIFFScanlineSize(tiff.get())));
  const bool gray = layout.photometric == PHOTOMETRIC_MINISBLACK;
  for (int y = 0; y < image.height; ++y) {
    if (TIFFReadScanline(tiff.get(), row.data(), static_cast<uint32_t>(y), 0) != 1) {
      tiff.fail_with("corrupt TIFF data in row " + std::to_string(y));
    }
    uint8_t* out = &image.pixels[static_cast<size_t>(y) * image.width * 3];
    for (int x = 0; x < image.width; ++x) {
      const size_t first = static_cast<size_t>(x) * layout.samples;
      for (int c = 0; c < 3; ++c) {
        out[x * 3 + c] = to_8_bits(row.data(), gray ? first : first + c, layout.bits, gray);
      }
    }
  }
}

}  // namespace

ImageHeader read_tiff_header(std::span<const uint8_t> bytes) {
  return header_of(OpenTiff(bytes));
}

void decode_tiff(std::span<const uint8_t> bytes, RgbImage& image) {
  OpenTiff tiff(bytes);
  const ImageHeader header = header_of(tiff);
  const SampleLayout layout = layout_of(tiff.get());
  if (reads_by_rows(tiff.get(), layout)) {
    image.reset(header.width, header.height);
    read_rows(tiff, layout, image);
    return;
  }
  char reason[1024] = "";
  if (TIFFRGBAImageOK(tiff.get(), reason) != 1) {
    throw BadImageError(std::string("unsupported TIFF: ") + reason);
  }
  thread_local std::vector<uint32_t> abgr;
  abgr.resize(static_cast<size_t>(header.width) * header.height);
  if (TIFFReadRGBAImageOriented(tiff.get(), static_cast<uint32_t>(header.width),
                                static_cast<uint32_t>(header.height), abgr.data(),
                                ORIENTATION_TOPLEFT, /*stop_on_error=*/1) != 1) {
    tiff.fail_with("corrupt TIFF data");
  }
  image.reset(header.width, header.height);
  for (size_t i = 0; i < abgr.size(); ++i) {
    image.pixels[i * 3 + 0] = static_cast<uint8_t>(TIFFGetR(abgr[i]));
    image.pixels[i * 3 + 1] = static_cast<uint8_t>(TIFFGetG(abgr[i]));
    image.pixels[i * 3 + 2] = static_cast<uint8_t>(TIFFGetB(abgr[i]));
  }
}

}  // namespace engine::data::decoders
