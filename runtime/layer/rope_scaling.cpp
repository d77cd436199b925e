// The rotary frequencies of each rope_type, as transformers 4.47.1 computes
// them (modeling_rope_utils.py's ROPE_INIT_FUNCTIONS; LongRoPE as Phi-3's
// Phi3LongRoPEScaledRotaryEmbedding): in double, rounded to f32 once.
#include <algorithm>
#include <cmath>

#include "model.h"

namespace rill::layer {
namespace {

constexpr double kPi = 3.14159265358979323846;

// YaRN's dimension at which num_rotations full turns fit in max_positions.
double correction_dim(double num_rotations, double dim, double base, double max_positions) {
  return dim * std::log(max_positions / (num_rotations * 2 * kPi)) / (2 * std::log(base));
}

}  // namespace

RopeFrequencies rope_frequencies(const rill_model_desc& d, int64_t seq_len) {
  const int64_t half = d.rope_dim / 2;
  const double dim = d.rope_dim;
  double base = d.rope_theta;
  const double factor = d.rope_factor;
  const double max_positions = d.max_position_embeddings;
  const double original = d.rope_original_max_position_embeddings;
  if (d.rope_type == RILL_ROPE_DYNAMIC) {
    const double length = std::max(static_cast<double>(seq_len), max_positions);
    base *= std::pow(factor * length / max_positions - (factor - 1), dim / (dim - 2));
  }
  // pos_freq_i = base^(2i / dim); the default inverse frequency is its inverse.
  std::vector<double> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) inv[i] = 1.0 / std::pow(base, static_cast<double>(2 * i) / dim);
  double attention = 1.0;
  switch (d.rope_type) {
    case RILL_ROPE_LINEAR:
      for (double& f : inv) f /= factor;
      break;
    case RILL_ROPE_YARN: {
      attention = d.rope_attention_factor > 0 ? d.rope_attention_factor : 0.1 * std::log(factor) + 1.0;
      const double low = std::max(std::floor(correction_dim(d.rope_beta_fast, dim, base, max_positions)), 0.0);
      double high = std::min(std::ceil(correction_dim(d.rope_beta_slow, dim, base, max_positions)), dim - 1);
      if (low == high) high += 0.001;
      for (int64_t i = 0; i < half; ++i) {
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolation = 1 - ramp;
        inv[i] = inv[i] / factor * (1 - extrapolation) + inv[i] * extrapolation;
      }
      break;
    }
    case RILL_ROPE_LONGROPE: {
      const float* ext = seq_len > d.rope_original_max_position_embeddings ? d.rope_long_factor : d.rope_short_factor;
      for (int64_t i = 0; i < half; ++i) inv[i] /= ext[i];
      const double scale = max_positions / original;
      attention = d.rope_attention_factor > 0 ? d.rope_attention_factor
                  : scale <= 1.0              ? 1.0
                                              : std::sqrt(1 + std::log(scale) / std::log(original));
      break;
    }
    case RILL_ROPE_LLAMA3: {
      const double low_wavelen = original / d.rope_low_freq_factor;
      const double high_wavelen = original / d.rope_high_freq_factor;
      for (double& f : inv) {
        const double wavelen = 2 * kPi / f;
        if (wavelen > low_wavelen) {
          f /= factor;
        } else if (!(wavelen < high_wavelen)) {
          const double smooth = (original / wavelen - d.rope_low_freq_factor) /
                                (d.rope_high_freq_factor - d.rope_low_freq_factor);
          f = (1 - smooth) * f / factor + smooth * f;
        }
      }
      break;
    }
    default: break;
  }
  RopeFrequencies out;
  out.inv_freq.assign(inv.begin(), inv.end());
  out.attention_factor = static_cast<float>(attention);
  return out;
}

}  // namespace rill::layer
