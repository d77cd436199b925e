#include "reference.h"

#include <cmath>
#include <limits>

namespace rill_ref {

double round_to_dtype(double v, rill_dtype dtype) {
  if (dtype == RILL_DTYPE_F32 || !std::isfinite(v) || v == 0.0) {
    return dtype == RILL_DTYPE_F32 ? static_cast<double>(static_cast<float>(v)) : v;
  }
  // First to f32 as the backends do (they compute in f32), then to the
  // 16-bit format: mantissa bits and smallest normal exponent per format.
  const double f = static_cast<double>(static_cast<float>(v));
  const int mantissa_bits = dtype == RILL_DTYPE_F16 ? 10 : 7;
  const int min_exponent = dtype == RILL_DTYPE_F16 ? -14 : -126;
  int exponent = std::ilogb(f);
  if (exponent < min_exponent) exponent = min_exponent;  // subnormal: fixed spacing
  const double ulp = std::ldexp(1.0, exponent - mantissa_bits);
  const double rounded = std::nearbyint(f / ulp) * ulp;  // default rounding mode: to nearest even
  if (dtype == RILL_DTYPE_F16 && std::fabs(rounded) > 65504.0) return std::copysign(HUGE_VAL, f);
  if (dtype == RILL_DTYPE_BF16 && std::fabs(rounded) > 3.3895313892515355e38) return std::copysign(HUGE_VAL, f);
  return rounded;
}

double nmse(const float* actual, const double* expected, size_t count) {
  double error = 0.0, norm = 0.0;
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(actual[i])) return std::numeric_limits<double>::infinity();
    const double diff = static_cast<double>(actual[i]) - expected[i];
    error += diff * diff;
    norm += expected[i] * expected[i];
  }
  if (norm == 0.0) return error == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return error / norm;
}

double nmse(const std::vector<float>& actual, const std::vector<double>& expected) {
  if (actual.size() != expected.size()) return std::numeric_limits<double>::infinity();
  return nmse(actual.data(), expected.data(), actual.size());
}

size_t count_non_finite(const float* values, size_t count) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += std::isfinite(values[i]) ? 0 : 1;
  return n;
}

size_t count_non_finite(const std::vector<float>& values) { return count_non_finite(values.data(), values.size()); }

std::vector<double> to_double(const std::vector<float>& values) { return {values.begin(), values.end()}; }

std::vector<double> residual_add(const std::vector<float>& residual, const std::vector<float>& update,
                                 const std::vector<float>& gain, float residual_scale, float update_scale,
                                 int64_t rows, int64_t d) {
  std::vector<double> out(static_cast<size_t>(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < d; ++i) {
      const size_t at = static_cast<size_t>(r * d + i);
      const double g = gain.empty() ? 1.0 : gain[static_cast<size_t>(i)];
      out[at] = static_cast<double>(residual_scale) * residual[at] + static_cast<double>(update_scale) * g * update[at];
    }
  }
  return out;
}

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<float>& weight, float eps, int64_t rows,
                             int64_t d) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * d;
    double sum_squares = 0.0;
    for (int64_t i = 0; i < d; ++i) sum_squares += row[i] * row[i];
    const double scale = 1.0 / std::sqrt(sum_squares / static_cast<double>(d) + static_cast<double>(eps));
    for (int64_t i = 0; i < d; ++i) {
      out[static_cast<size_t>(r * d + i)] = row[i] * scale * (weight.empty() ? 1.0 : weight[static_cast<size_t>(i)]);
    }
  }
  return out;
}

std::vector<double> layer_norm(const std::vector<double>& x, const std::vector<float>& weight,
                               const std::vector<float>& bias, float eps, int64_t rows, int64_t d) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * d;
    double sum = 0.0;
    for (int64_t i = 0; i < d; ++i) sum += row[i];
    const double mean = sum / static_cast<double>(d);
    double sum_squares = 0.0;
    for (int64_t i = 0; i < d; ++i) sum_squares += (row[i] - mean) * (row[i] - mean);
    const double scale = 1.0 / std::sqrt(sum_squares / static_cast<double>(d) + static_cast<double>(eps));
    for (int64_t i = 0; i < d; ++i) {
      const double w = weight.empty() ? 1.0 : weight[static_cast<size_t>(i)];
      const double b = bias.empty() ? 0.0 : bias[static_cast<size_t>(i)];
      out[static_cast<size_t>(r * d + i)] = (row[i] - mean) * scale * w + b;
    }
  }
  return out;
}

namespace {
std::vector<double> rounded(const std::vector<double>& values, rill_dtype dtype) {
  std::vector<double> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = round_to_dtype(values[i], dtype);
  return out;
}
}  // namespace

std::vector<double> fused_add_rms_norm(const std::vector<float>& x, const std::vector<float>& residual,
                                       const std::vector<float>& gain, const std::vector<float>& weight, float eps,
                                       float residual_scale, float update_scale, int64_t rows, int64_t d,
                                       rill_dtype dtype, std::vector<double>* residual_out) {
  std::vector<double> sum = residual_add(residual, x, gain, residual_scale, update_scale, rows, d);
  std::vector<double> out = rms_norm(rounded(sum, dtype), weight, eps, rows, d);
  if (residual_out) *residual_out = std::move(sum);
  return out;
}

std::vector<double> fused_add_layer_norm(const std::vector<float>& x, const std::vector<float>& residual,
                                         const std::vector<float>& gain, const std::vector<float>& weight,
                                         const std::vector<float>& bias, float eps, float residual_scale,
                                         float update_scale, int64_t rows, int64_t d, rill_dtype dtype,
                                         std::vector<double>* residual_out) {
  std::vector<double> sum = residual_add(residual, x, gain, residual_scale, update_scale, rows, d);
  std::vector<double> out = layer_norm(rounded(sum, dtype), weight, bias, eps, rows, d);
  if (residual_out) *residual_out = std::move(sum);
  return out;
}

std::vector<double> gemm(const std::vector<float>& a, const std::vector<float>& w, const std::vector<float>& bias,
                         float alpha, float beta, const std::vector<float>& out, int64_t rows, int64_t n, int64_t k) {
  std::vector<double> result(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        dot += static_cast<double>(a[static_cast<size_t>(r * k + i)]) * w[static_cast<size_t>(j * k + i)];
      }
      double v = static_cast<double>(alpha) * dot;
      if (beta != 0.0f) v += static_cast<double>(beta) * out[static_cast<size_t>(r * n + j)];
      if (!bias.empty()) v += bias[static_cast<size_t>(j)];
      result[static_cast<size_t>(r * n + j)] = v;
    }
  }
  return result;
}

}  // namespace rill_ref
