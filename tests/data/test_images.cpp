#include "tests/data/test_images.h"

#include <tiffio.h>
#include <turbojpeg.h>
#include <webp/encode.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace engine::data::testing {

namespace {

void put_u32_be(std::vector<uint8_t>& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<uint8_t>(value >> shift));
}

void put_u16_le(std::vector<uint8_t>& out, uint32_t value) {
  out.push_back(static_cast<uint8_t>(value));
  out.push_back(static_cast<uint8_t>(value >> 8));
}

void put_u32_le(std::vector<uint8_t>& out, uint32_t value) {
  put_u16_le(out, value & 0xFFFF);
  put_u16_le(out, value >> 16);
}

void png_chunk(std::vector<uint8_t>& out, const char* kind, const std::vector<uint8_t>& data) {
  put_u32_be(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out.insert(out.end(), kind, kind + 4);
  out.insert(out.end(), data.begin(), data.end());
  put_u32_be(out, static_cast<uint32_t>(crc32(0, out.data() + start, out.size() - start)));
}

std::vector<uint8_t> png_ihdr(uint32_t width, uint32_t height, int bit_depth, int color_type) {
  std::vector<uint8_t> ihdr;
  put_u32_be(ihdr, width);
  put_u32_be(ihdr, height);
  ihdr.insert(ihdr.end(),
              {static_cast<uint8_t>(bit_depth), static_cast<uint8_t>(color_type), 0, 0, 0});
  return ihdr;
}

const uint8_t kPngSignature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

std::vector<uint8_t> compress_jpeg(const uint8_t* pixels, int width, int height, int format,
                                   int subsampling, int quality, int flags) {
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int status = tjCompress2(handle, pixels, width, 0, height, format, &buffer, &size,
                                 subsampling, quality, flags);
  std::string error = status != 0 ? tjGetErrorStr2(handle) : "";
  tjDestroy(handle);
  if (status != 0) throw std::runtime_error("tjCompress2: " + error);
  std::vector<uint8_t> out(buffer, buffer + size);
  tjFree(buffer);
  return out;
}

}  // namespace

RgbImage make_test_picture(int width, int height, int variant) {
  RgbImage image;
  image.reset(width, height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &image.pixels[(static_cast<size_t>(y) * width + x) * 3];
      p[0] = static_cast<uint8_t>(255 * x / std::max(width - 1, 1));
      p[1] = static_cast<uint8_t>(255 * y / std::max(height - 1, 1));
      const double wave = std::sin(x * 0.2 + variant) * std::cos(y * 0.15);
      p[2] = static_cast<uint8_t>(128 + 100 * wave);
    }
  }
  return image;
}

std::vector<uint8_t> encode_jpeg(const RgbImage& image, int quality, bool progressive,
                                 Chroma chroma) {
  const int subsampling[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_411};
  return compress_jpeg(image.pixels.data(), image.width, image.height, TJPF_RGB,
                       subsampling[static_cast<int>(chroma)], quality,
                       progressive ? TJFLAG_PROGRESSIVE : 0);
}

std::vector<uint8_t> encode_jpeg_gray(const RgbImage& image, int quality) {
  return compress_jpeg(image.pixels.data(), image.width, image.height, TJPF_RGB, TJSAMP_GRAY,
                       quality, 0);
}

std::vector<uint8_t> encode_png_samples(int width, int height, int bit_depth, int color_type,
                                        const std::vector<uint8_t>& samples) {
  const size_t row_bytes = height > 0 ? samples.size() / static_cast<size_t>(height) : 0;
  std::vector<uint8_t> raw;  // filter byte 0 ("none") before each row
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), samples.begin() + y * row_bytes, samples.begin() + (y + 1) * row_bytes);
  }
  std::vector<uint8_t> zlib_stream = {0x78, 0x01};
  for (size_t offset = 0; offset < raw.size() || offset == 0;) {
    const size_t block = std::min<size_t>(raw.size() - offset, 65535);
    const bool last = offset + block == raw.size();
    zlib_stream.push_back(last ? 1 : 0);
    put_u16_le(zlib_stream, static_cast<uint32_t>(block));
    put_u16_le(zlib_stream, static_cast<uint32_t>(~block & 0xFFFF));
    zlib_stream.insert(zlib_stream.end(), raw.begin() + offset, raw.begin() + offset + block);
    offset += block;
    if (last) break;
  }
  put_u32_be(zlib_stream, static_cast<uint32_t>(adler32(1, raw.data(), raw.size())));
  std::vector<uint8_t> out(std::begin(kPngSignature), std::end(kPngSignature));
  png_chunk(out, "IHDR", png_ihdr(width, height, bit_depth, color_type));
  png_chunk(out, "IDAT", zlib_stream);
  png_chunk(out, "IEND", {});
  return out;
}

std::vector<uint8_t> encode_png(const RgbImage& image) {
  return encode_png_samples(image.width, image.height, 8, 2, image.pixels);
}

std::vector<uint8_t> png_header_only(uint32_t width, uint32_t height) {
  std::vector<uint8_t> out(std::begin(kPngSignature), std::end(kPngSignature));
  png_chunk(out, "IHDR", png_ihdr(width, height, 8, 2));
  return out;
}

std::vector<uint8_t> png_without_ihdr(const RgbImage& image) {
  std::vector<uint8_t> png = encode_png(image);
  png[15] = 'X';  // the first chunk's type, after the signature (8) and its length (4): IHDX
  return png;
}

std::vector<uint8_t> with_jpeg_dimensions(std::vector<uint8_t> jpeg, uint16_t width,
                                          uint16_t height) {
  for (size_t i = 2; i + 8 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC2)) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<uint8_t>(height);
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<uint8_t>(width);
      return jpeg;
    }
  }
  throw std::runtime_error("with_jpeg_dimensions: no SOF0/SOF2 marker");
}

std::vector<uint8_t> encode_bmp(const RgbImage& image) {
  const uint32_t row_bytes = (static_cast<uint32_t>(image.width) * 3 + 3) & ~3u;
  const uint32_t pixel_bytes = row_bytes * static_cast<uint32_t>(image.height);
  std::vector<uint8_t> out = {'B', 'M'};
  put_u32_le(out, 54 + pixel_bytes);
  put_u32_le(out, 0);
  put_u32_le(out, 54);
  put_u32_le(out, 40);  // BITMAPINFOHEADER
  put_u32_le(out, static_cast<uint32_t>(image.width));
  put_u32_le(out, static_cast<uint32_t>(image.height));  // bottom-up
  put_u16_le(out, 1);
  put_u16_le(out, 24);
  for (int i = 0; i < 6; ++i)
    put_u32_le(out, 0);
  for (int y = image.height - 1; y >= 0; --y) {
    const size_t start = out.size();
    for (int x = 0; x < image.width; ++x) {
      const uint8_t* p = &image.pixels[(static_cast<size_t>(y) * image.width + x) * 3];
      out.insert(out.end(), {p[2], p[1], p[0]});
    }
    out.resize(start + row_bytes, 0);
  }
  return out;
}

std::vector<uint8_t> encode_ppm(const RgbImage& image) {
  const std::string header =
      "P6\n" + std::to_string(image.width) + " " + std::to_string(image.height) + "\n255\n";
  std::vector<uint8_t> out(header.begin(), header.end());
  out.insert(out.end(), image.pixels.begin(), image.pixels.end());
  return out;
}

std::vector<uint8_t> encode_tiff(const RgbImage& image, const std::filesystem::path& scratch) {
  TIFF* tiff = TIFFOpen(scratch.c_str(), "w");
  if (tiff == nullptr) throw std::runtime_error("TIFFOpen failed for " + scratch.string());
  TIFFSetField(tiff, TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(image.width));
  TIFFSetField(tiff, TIFFTAG_IMAGELENGTH, static_cast<uint32_t>(image.height));
  TIFFSetField(tiff, TIFFTAG_SAMPLESPERPIXEL, 3);
  TIFFSetField(tiff, TIFFTAG_BITSPERSAMPLE, 8);
  TIFFSetField(tiff, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
  TIFFSetField(tiff, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(tiff, TIFFTAG_COMPRESSION, COMPRESSION_LZW);
  TIFFSetField(tiff, TIFFTAG_ROWSPERSTRIP, 16);
  for (int y = 0; y < image.height; ++y) {
    auto* row = const_cast<uint8_t*>(&image.pixels[static_cast<size_t>(y) * image.width * 3]);
    TIFFWriteScanline(tiff, row, static_cast<uint32_t>(y), 0);
  }
  TIFFClose(tiff);
  std::ifstream in(scratch, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> encode_webp(const RgbImage& image, bool lossless) {
  uint8_t* buffer = nullptr;
  const size_t size = lossless ? WebPEncodeLosslessRGB(image.pixels.data(), image.width,
                                                       image.height, image.width * 3, &buffer)
                               : WebPEncodeRGB(image.pixels.data(), image.width, image.height,
                                               image.width * 3, 85.0f, &buffer);
  if (size == 0) throw std::runtime_error("WebP encoding failed");
  std::vector<uint8_t> out(buffer, buffer + size);
  WebPFree(buffer);
  return out;
}

void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

int max_abs_difference(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.size() != b.size()) return 256;
  int worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(int{a[i]} - int{b[i]}));
  return worst;
}

double mean_abs_difference(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.size() != b.size() || a.empty()) return 256.0;
  double total = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    total += std::abs(int{a[i]} - int{b[i]});
  return total / static_cast<double>(a.size());
}

int max_abs_difference(const RgbImage& a, const RgbImage& b) {
  if (a.width != b.width || a.height != b.height) return 256;
  return max_abs_difference(a.pixels, b.pixels);
}

double mean_abs_difference(const RgbImage& a, const RgbImage& b) {
  if (a.width != b.width || a.height != b.height) return 256.0;
  return mean_abs_difference(a.pixels, b.pixels);
}

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "engine-data-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace engine::data::testing
