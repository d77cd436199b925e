#include "reference.h"

#include <algorithm>
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

std::vector<double> rope(const std::vector<float>& x, const std::vector<int32_t>& positions, int64_t heads,
                         int64_t head_dim, double theta, int64_t rotary_dim) {
  std::vector<double> out = to_double(x);
  const int64_t half = rotary_dim / 2;
  for (size_t token = 0; token < positions.size(); ++token) {
    for (int64_t h = 0; h < heads; ++h) {
      const size_t row = (token * static_cast<size_t>(heads) + static_cast<size_t>(h)) * static_cast<size_t>(head_dim);
      for (int64_t i = 0; i < half; ++i) {
        const double angle =
            positions[token] * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(rotary_dim));
        const double first = x[row + static_cast<size_t>(i)], second = x[row + static_cast<size_t>(i + half)];
        out[row + static_cast<size_t>(i)] = first * std::cos(angle) - second * std::sin(angle);
        out[row + static_cast<size_t>(i + half)] = second * std::cos(angle) + first * std::sin(angle);
      }
    }
  }
  return out;
}

std::vector<double> rope_freqs(const std::vector<float>& x, const std::vector<int32_t>& positions, int64_t heads,
                               int64_t head_dim, const std::vector<float>& inv_freq, double attention_factor) {
  std::vector<double> out = to_double(x);
  const size_t half = inv_freq.size();
  for (size_t token = 0; token < positions.size(); ++token) {
    for (int64_t h = 0; h < heads; ++h) {
      const size_t row = (token * static_cast<size_t>(heads) + static_cast<size_t>(h)) * static_cast<size_t>(head_dim);
      for (size_t i = 0; i < half; ++i) {
        const double angle = positions[token] * static_cast<double>(inv_freq[i]);
        const double c = attention_factor * std::cos(angle), s = attention_factor * std::sin(angle);
        const double first = x[row + i], second = x[row + i + half];
        out[row + i] = first * c - second * s;
        out[row + i + half] = second * c + first * s;
      }
    }
  }
  return out;
}

std::vector<double> attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const AttentionShape& s, const std::vector<int32_t>& kv_lengths, double scale,
                              int64_t window, double softcap) {
  std::vector<double> out(q.size());
  const int64_t group = s.q_heads / s.kv_heads;
  auto q_at = [&](int64_t b, int64_t t, int64_t h) { return ((b * s.queries + t) * s.q_heads + h) * s.head_dim; };
  auto kv_at = [&](int64_t b, int64_t j, int64_t h) { return ((b * s.slots + j) * s.kv_heads + h) * s.head_dim; };
  std::vector<double> weights;
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t length = kv_lengths.empty() ? s.slots : kv_lengths[static_cast<size_t>(b)];
    for (int64_t t = 0; t < s.queries; ++t) {
      const int64_t position = length - s.queries + t;
      const int64_t visible = position + 1;
      for (int64_t h = 0; h < s.q_heads; ++h) {
        const int64_t kv_head = h / group;
        weights.assign(static_cast<size_t>(visible), 0.0);
        double top = -HUGE_VAL;
        for (int64_t j = 0; j < visible; ++j) {
          double dot = 0.0;
          for (int64_t e = 0; e < s.head_dim; ++e) {
            dot += static_cast<double>(q[static_cast<size_t>(q_at(b, t, h) + e)]) *
                   k[static_cast<size_t>(kv_at(b, j, kv_head) + e)];
          }
          double logit = scale * dot;
          if (softcap > 0.0) logit = softcap * std::tanh(logit / softcap);
          if (window > 0 && j <= position - window) logit = -HUGE_VAL;  // outside the window
          weights[static_cast<size_t>(j)] = logit;
          top = std::max(top, logit);
        }
        double sum = 0.0;
        for (double& w : weights) sum += (w = std::exp(w - top));
        for (int64_t e = 0; e < s.head_dim; ++e) {
          double acc = 0.0;
          for (int64_t j = 0; j < visible; ++j) {
            acc += weights[static_cast<size_t>(j)] * v[static_cast<size_t>(kv_at(b, j, kv_head) + e)];
          }
          out[static_cast<size_t>(q_at(b, t, h) + e)] = acc / sum;
        }
      }
    }
  }
  return out;
}

std::vector<double> activation(rill_act_fn fn, const std::vector<float>& x, const std::vector<float>& up) {
  const double pi = 3.14159265358979323846;
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    double y = 0.0;
    switch (fn) {
      case RILL_ACT_SILU: y = v / (1.0 + std::exp(-v)); break;
      case RILL_ACT_GELU: y = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); break;
      case RILL_ACT_GELU_TANH: y = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (v + 0.044715 * v * v * v))); break;
      case RILL_ACT_RELU: y = std::max(v, 0.0); break;
      default: y = std::numeric_limits<double>::quiet_NaN(); break;
    }
    out[i] = up.empty() ? y : y * up[i];
  }
  return out;
}

}  // namespace rill_ref
