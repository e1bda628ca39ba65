#include "data/pil_geometry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>

namespace engine::data {

namespace {

// CPython's degToRad and radToDeg (Modules/mathmodule.c).
constexpr double kDegToRad = std::numbers::pi / 180.0;
constexpr double kRadToDeg = 180.0 / std::numbers::pi;

// Pillow's COORD: a negative coordinate is outside, whatever its size (no truncation to 0).
int pil_coord(double v) {
  return v < 0.0 ? -1 : static_cast<int>(v);
}

int pil_floor(double v) {
  return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v);
}

// Python's round(x, 15): the nearest decimal with 15 digits after the point, correctly rounded
// both ways (printf's %f and strtod are exact in glibc, as CPython's dtoa is).
double python_round15(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%.15f", x);
  return std::strtod(text, nullptr);
}

// Python's float %: the result takes the divisor's sign.
double python_mod(double x, double y) {
  double mod = std::fmod(x, y);
  if (mod != 0.0) {
    if ((y < 0) != (mod < 0)) mod += y;
  } else {
    mod = std::copysign(0.0, y);
  }
  return mod;
}

void copy_pixel(const RgbImage& in, int x_in, int y_in, uint8_t* out) {
  std::memcpy(out, in.pixels.data() + (static_cast<size_t>(y_in) * in.width + x_in) * 3, 3);
}

uint8_t* pixel_at(RgbImage& image, int x, int y) {
  return image.pixels.data() + (static_cast<size_t>(y) * image.width + x) * 3;
}

// ImagingScaleAffine: one source column per output column, tabulated by adding a0 (no
// rotation or shear, so rows and columns map independently).
void scale_affine(const RgbImage& in, const AffineMatrix& a, RgbImage& out) {
  std::vector<int> column(static_cast<size_t>(out.width), -1);
  double xo = a[2] + a[0] * 0.5;
  for (int x = 0; x < out.width; ++x) {
    const int x_in = pil_coord(xo);
    if (x_in >= 0 && x_in < in.width) column[static_cast<size_t>(x)] = x_in;
    xo += a[0];
  }
  double yo = a[5] + a[4] * 0.5;
  for (int y = 0; y < out.height; ++y) {
    const int y_in = pil_coord(yo);
    if (y_in >= 0 && y_in < in.height) {
      for (int x = 0; x < out.width; ++x) {
        if (column[static_cast<size_t>(x)] >= 0)
          copy_pixel(in, column[static_cast<size_t>(x)], y_in, pixel_at(out, x, y));
      }
    }
    yo += a[4];
  }
}

bool fits_fixed_point(const AffineMatrix& a, int x, int y) {
  return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 &&
         std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

// affine_fixed: 16.16 fixed point, steps added per pixel and per row. Pillow's ints cannot
// overflow here (fits_fixed_point bounds them); int64 keeps that true without relying on it.
void fixed_point_affine(const RgbImage& in, const AffineMatrix& a, RgbImage& out) {
  const auto fix = [](double v) { return static_cast<int64_t>(pil_floor(v * 65536.0 + 0.5)); };
  const int64_t a0 = fix(a[0]);
  const int64_t a1 = fix(a[1]);
  const int64_t a3 = fix(a[3]);
  const int64_t a4 = fix(a[4]);
  int64_t row_x = fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
  int64_t row_y = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
  for (int y = 0; y < out.height; ++y) {
    int64_t xx = row_x;
    int64_t yy = row_y;
    for (int x = 0; x < out.width; ++x) {
      const int64_t x_in = xx >> 16;  // arithmetic shift: floor, as Pillow's int >> 16
      const int64_t y_in = yy >> 16;
      if (x_in >= 0 && x_in < in.width && y_in >= 0 && y_in < in.height)
        copy_pixel(in, static_cast<int>(x_in), static_cast<int>(y_in), pixel_at(out, x, y));
      xx += a0;
      yy += a3;
    }
    row_x += a1;
    row_y += a4;
  }
}

// ImagingTransformAffine's double path, for matrices too large for 16.16.
void double_affine(const RgbImage& in, const AffineMatrix& a, RgbImage& out) {
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int y = 0; y < out.height; ++y) {
    double xx = xo;
    double yy = yo;
    for (int x = 0; x < out.width; ++x) {
      const int x_in = pil_coord(xx);
      const int y_in = pil_coord(yy);
      if (x_in >= 0 && x_in < in.width && y_in >= 0 && y_in < in.height)
        copy_pixel(in, x_in, y_in, pixel_at(out, x, y));
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
}

// Image.transpose(ROTATE_90 / ROTATE_180 / ROTATE_270); quarter_turns counter-clockwise.
void transpose(const RgbImage& in, int quarter_turns, RgbImage& out) {
  const bool swaps = quarter_turns % 2 == 1;
  out.reset(swaps ? in.height : in.width, swaps ? in.width : in.height);
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      int x_in = x;
      int y_in = y;
      if (quarter_turns == 1) {  // the input's right column becomes the top row
        x_in = in.width - 1 - y;
        y_in = x;
      } else if (quarter_turns == 2) {
        x_in = in.width - 1 - x;
        y_in = in.height - 1 - y;
      } else if (quarter_turns == 3) {
        x_in = y;
        y_in = in.height - 1 - x;
      }
      copy_pixel(in, x_in, y_in, pixel_at(out, x, y));
    }
  }
}

}  // namespace

double python_radians(double degrees) {
  return degrees * kDegToRad;
}

double python_degrees(double radians) {
  return radians * kRadToDeg;
}

AffineMatrix torchvision_inverse_affine(const AffineParams& p) {
  const double rot = python_radians(p.angle_degrees);
  const double sx = python_radians(p.shear_degrees[0]);
  const double sy = python_radians(p.shear_degrees[1]);
  const double cx = p.center[0];
  const double cy = p.center[1];
  const double tx = p.translate[0];
  const double ty = p.translate[1];
  // RSS = rotation * scale * shear, then inverted, in torchvision's expression order.
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  AffineMatrix m = {d, -b, 0.0, -c, a, 0.0};
  for (double& v : m)
    v /= p.scale;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

void pil_affine_nearest(const RgbImage& in, const AffineMatrix& a, RgbImage& out) {
  out.reset(in.width, in.height);
  std::fill(out.pixels.begin(), out.pixels.end(), uint8_t{0});
  if (a[1] == 0 && a[3] == 0) {
    scale_affine(in, a, out);
  } else if (fits_fixed_point(a, 0, 0) && fits_fixed_point(a, out.width, out.height) &&
             fits_fixed_point(a, 0, out.height) && fits_fixed_point(a, out.width, 0)) {
    fixed_point_affine(in, a, out);
  } else {
    double_affine(in, a, out);
  }
}

void pil_rotate_nearest(const RgbImage& in, double angle_degrees, RgbImage& out) {
  const double angle = python_mod(angle_degrees, 360.0);
  if (angle == 0) {
    out = in;
    return;
  }
  if (angle == 180) return transpose(in, 2, out);
  if ((angle == 90 || angle == 270) && in.width == in.height)
    return transpose(in, angle == 90 ? 1 : 3, out);
  const double radians = -python_radians(angle);
  AffineMatrix m = {python_round15(std::cos(radians)),  python_round15(std::sin(radians)), 0.0,
                    python_round15(-std::sin(radians)), python_round15(std::cos(radians)), 0.0};
  const double cx = in.width / 2.0;
  const double cy = in.height / 2.0;
  // Pillow's transform(-cx, -cy, matrix): a x + b y + c with c = 0.
  m[2] = m[0] * -cx + m[1] * -cy + m[2];
  m[5] = m[3] * -cx + m[4] * -cy + m[5];
  m[2] += cx;
  m[5] += cy;
  pil_affine_nearest(in, m, out);
}

}  // namespace engine::data
