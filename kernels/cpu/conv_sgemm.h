// The convolution passes of CPUs without AVX-512, on the portable GEMM (kernels/cpu/sgemm.h:
// OpenBLAS, else the blocked loop). Where it pays, over the output pixels' tap classes
// (kernels/cpu/tap_classes.h) as the AVX-512 paths do: a GEMM over im2col's full rows
// multiplies the zero padding too, which on the small maps of ResNets trained on 32-64 px
// images is most of the work (a 3x3 filter on a 1x1 map has 1 tap of 9 inside), so each
// class's pixels are lowered to their own taps only and multiplied by those filter rows alone.
// On larger maps one GEMM per column chunk over the full rows is faster than a GEMM per class
// (tap_classes_pay).
#pragma once

#include <cstdint>

#include "kernels/conv_shape.h"
#include "kernels/cpu/tap_classes.h"

namespace engine::cpu {

// A GEMM's B operand, depth rows (the filters' taps * C, KRSC order) by the output channels,
// row-major with leading dimension ld; transposed: stored as B^T (a row per output channel, as
// the filters are stored).
struct FilterOperand {
  const float* data = nullptr;
  int64_t ld = 0;
  bool transposed = false;
  // Where depth row `row` starts.
  const float* row(int64_t row) const { return transposed ? data + row : data + row * ld; }
};

// Whether the products per tap class are estimated to take less time than one product over
// im2col's full rows: each GEMM call is costed as its rows times its depth plus a fixed
// overhead per call, and the classes must come under the full rows' cost by a margin.
bool tap_classes_pay(const Conv2dShape& shape, const TapClassPlan& plan);

// y [pixels x out_channels] = im2col(x) * w; every output written. Where the classes pay, w's
// rows of taps that no pixel reads inside the input (TapClassPlan::taps_read) are not read.
void forward_sgemm(const Conv2dShape& shape, const float* x, const FilterOperand& w, float* y);

// dW [out_channels x taps * C] = dy^T * im2col(x) (+ dW when beta is 1): the products give
// dW^T, which is then transposed into dW (with the classes, the rows of taps read inside the
// input only: the rest of dW is zero, or kept when beta is 1). Sums in an order fixed by the
// shape, not by the threads.
void filter_gradient_sgemm(const Conv2dShape& shape, const float* x, const float* dy, float beta,
                           float* dw);

}  // namespace engine::cpu
