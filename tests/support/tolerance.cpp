#include "tolerance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

// rill_backend_dtype_name: the tests that load a plugin directly do not link
// librill, so not rill_dtype_name.
#include "rill_backend.h"

namespace rill_tol {

Limits limits(rill_dtype dtype) {
  // Each limit is a small multiple of the largest error the conformance suite
  // measured over every op, shape and value range in it, on the CPU backend
  // and on Vulkan (lavapipe); the figure and where it arose are beside it.
  switch (dtype) {
    case RILL_DTYPE_F16:
      return {1e-6,   // 1.4e-7: fused_add_rms_norm on the CPU and Vulkan
              1e-2};  // 2.3e-3: Vulkan
    case RILL_DTYPE_BF16:
      return {5e-5,   // 1.0e-5: fused_add_rms_norm on the CPU and Vulkan
              1e-1};  // 2.2e-2: Vulkan
    // A block dtype: f32 GEMM results with weights in that format, against the
    // reference on the dequantized weights. The error is the activations'
    // rounding to 8 bits, per 32 for the 32-element formats and per 256 for
    // the K formats (the weights' own error is not counted), so it depends on
    // the format through that group and the weights' spread; the CPU
    // backend's figures (quant_test, a = N(0,1), w from N(0,1)), which reach
    // 2.8e-5 in the conformance suite (a = U(-1,1)). Backends that keep f32
    // activations have f32_activation_limits instead.
    case RILL_DTYPE_Q8_0:
      return {1e-4,   // 3.1e-5
              5e-2};  // 1.7e-2
    case RILL_DTYPE_Q4_0:
      return {1e-4,   // 3.2e-5
              5e-2};  // 1.6e-2
    case RILL_DTYPE_Q4_K:
      return {1e-4,   // 5.3e-5
              5e-2};  // 2.2e-2
    case RILL_DTYPE_Q5_K:
      return {1e-4,   // 5.1e-5
              5e-2};  // 2.2e-2
    case RILL_DTYPE_Q6_K:
      return {1e-4,   // 5.1e-5
              5e-2};  // 2.2e-2
    case RILL_DTYPE_Q5_0:
      return {1e-4,   // 3.1e-5
              5e-2};  // 1.7e-2
    case RILL_DTYPE_Q5_1:
      return {1e-4,   // 3.1e-5
              5e-2};  // 1.7e-2
    default:
      return {1e-10,  // 3.2e-11: Vulkan layer_norm of rows with mean 50 and spread 1 (CPU: 6.6e-12, GELU)
              5e-5};  // 1.3e-5: the same Vulkan layer_norm (CPU: 5.5e-6, GELU)
  }
}

Limits f32_activation_limits(rill_dtype) {
  // The largest error per format in the conformance suite and
  // vulkan_backend_test on Vulkan (lavapipe, deterministic), f32 activations:
  //   NMSE  q8_0 1.51e-13, q4_0 1.18e-13, q4_k 1.51e-13, q5_k 1.70e-13, q6_k 1.95e-13,
  //         q5_0 1.65e-13, q5_1 1.95e-13
  //   worst q8_0 2.04e-6,  q4_0 1.97e-6,  q4_k 2.65e-6,  q5_k 1.98e-6,  q6_k 2.43e-6,
  //         q5_0 2.30e-6,  q5_1 2.11e-6
  // Only the f32 sums round, so the format hardly matters: one limit for all.
  return {5e-13, 6e-6};
}

Score score(const float* actual, const double* expected, size_t count) {
  Score s;
  double error = 0.0, norm = 0.0, worst = 0.0;
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(actual[i])) {
      ++s.non_finite;
      continue;
    }
    const double diff = static_cast<double>(actual[i]) - expected[i];
    error += diff * diff;
    norm += expected[i] * expected[i];
    worst = std::max(worst, std::fabs(diff));
  }
  const double inf = std::numeric_limits<double>::infinity();
  if (s.non_finite > 0) {
    s.nmse = s.worst = inf;
  } else if (norm == 0.0) {
    s.nmse = s.worst = error == 0.0 ? 0.0 : inf;
  } else {
    s.nmse = error / norm;
    s.worst = worst / std::sqrt(norm / static_cast<double>(count));
  }
  return s;
}

Score score(const std::vector<float>& actual, const std::vector<double>& expected) {
  if (actual.size() != expected.size()) {
    Score s;
    s.nmse = s.worst = std::numeric_limits<double>::infinity();
    return s;
  }
  return score(actual.data(), expected.data(), actual.size());
}

bool within(const Score& s, rill_dtype dtype) { return within(s, limits(dtype)); }

bool within(const Score& s, const Limits& l) { return s.non_finite == 0 && s.nmse <= l.nmse && s.worst <= l.worst; }

std::string describe(const Score& s, rill_dtype dtype) { return describe(s, dtype, limits(dtype)); }

std::string describe(const Score& s, rill_dtype dtype, const Limits& l) {
  std::ostringstream text;
  text << rill_backend_dtype_name(dtype) << ": NMSE " << s.nmse << " (limit " << l.nmse << "), worst element " << s.worst
       << " (limit " << l.worst << "), " << s.non_finite << " NaN/Inf";
  return text.str();
}

namespace {
Score g_largest[RILL_DTYPE_Q5_1 + 1];  // by rill_dtype value
}  // namespace

double ulp_error(float actual, double expected) {
  const float rounded = static_cast<float>(expected);
  if (!std::isfinite(rounded) || !std::isfinite(actual)) {
    return actual == rounded || (std::isnan(actual) && std::isnan(rounded)) ? 0.0
                                                                            : std::numeric_limits<double>::infinity();
  }
  const double magnitude = std::max(std::fabs(expected), static_cast<double>(std::numeric_limits<float>::min()));
  const double ulp = std::ldexp(1.0, std::ilogb(magnitude) - 23);
  return std::fabs(static_cast<double>(actual) - expected) / ulp;
}

void note(const Score& s, rill_dtype dtype) {
  if (dtype < 0 || dtype > RILL_DTYPE_Q5_1) return;
  Score& largest = g_largest[dtype];
  largest.nmse = std::max(largest.nmse, s.nmse);
  largest.worst = std::max(largest.worst, s.worst);
  largest.non_finite += s.non_finite;
}

std::string largest_noted() {
  std::ostringstream text;
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16, RILL_DTYPE_Q8_0, RILL_DTYPE_Q4_0,
                           RILL_DTYPE_Q5_0, RILL_DTYPE_Q5_1, RILL_DTYPE_Q4_K, RILL_DTYPE_Q5_K, RILL_DTYPE_Q6_K}) {
    const Score& s = g_largest[dtype];
    if (dtype > RILL_DTYPE_BF16 && s.nmse == 0.0) continue;  // no quantized GEMM noted
    text << "largest error " << rill_backend_dtype_name(dtype) << ": NMSE " << s.nmse << ", worst element " << s.worst
         << "\n";
  }
  return text.str();
}

}  // namespace rill_tol
