// The one tolerance module of the C++ tests: how far a backend's result may
// stray from the double-precision reference (reference.h) and still pass.
//
// Two measures, both against the reference b, plus a NaN/Inf check:
//   NMSE  = sum((a-b)^2) / sum(b^2), ggml test-backend-ops' metric, which
//           bounds the error over the whole tensor;
//   worst = max|a-b| / rms(b), which bounds the worst element, so a handful
//           of wrong elements in a large tensor fail even when they hardly
//           move the NMSE.
// Limits are per dtype, a small multiple of the largest error measured on
// the CPU backend and on Vulkan (lavapipe); tolerance.cpp lists the figures.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "rill.h"

namespace rill_tol {

struct Limits {
  double nmse;
  double worst;
};

// The limits for results stored in dtype; for a block dtype, the limits of
// an f32 GEMM whose weights are stored in it (against the reference on the
// dequantized weights).
Limits limits(rill_dtype dtype);

// For a block dtype on a backend that multiplies f32 activations with the
// decoded weights (Vulkan): only the f32 sums round, far below limits(dtype),
// where the CPU's 8-bit activations dominate. CUDA keeps limits(dtype) until
// its figures are measured.
Limits f32_activation_limits(rill_dtype dtype);

struct Score {
  double nmse = 0.0;   // +Inf when actual holds a NaN or Inf, or b is all zeros and a is not
  double worst = 0.0;  // max|a-b| / rms(b); +Inf as for nmse
  size_t non_finite = 0;
};

Score score(const float* actual, const double* expected, size_t count);
Score score(const std::vector<float>& actual, const std::vector<double>& expected);

// True when score has no NaN/Inf and both measures are within limits(dtype)
// (or the limits given).
bool within(const Score& score, rill_dtype dtype);
bool within(const Score& score, const Limits& limits);

// "NMSE x (limit y), worst element x (limit y), n NaN/Inf" for failure
// messages, with limits(dtype) or the limits given.
std::string describe(const Score& score, rill_dtype dtype);
std::string describe(const Score& score, rill_dtype dtype, const Limits& limits);

// The error of one f32 result in units in the last place of the reference
// rounded to f32: |actual - expected| / ulp(expected), where ulp(v) is the
// spacing of f32 numbers at |v| (2^-149 below FLT_MIN). NaN and infinities
// count 0 when actual matches expected exactly, else +Inf. The element-wise
// bound for functions the CPU backend computes in f32 (its activations).
double ulp_error(float actual, double expected);

// Remembers the largest NMSE and worst-element error noted per dtype, and
// prints them, one line per dtype: how the figures in tolerance.cpp were measured.
void note(const Score& score, rill_dtype dtype);
std::string largest_noted();

}  // namespace rill_tol
