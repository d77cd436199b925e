// f32 <-> f16/bf16 conversion in rill_tensor_write_f32 / rill_tensor_read_f32,
// checked against definitions computed here: every 16-bit pattern decodes to
// its IEEE value, and encoding picks the nearest representable value with ties
// to even, NaN staying NaN, and overflow to infinity.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "rill.h"

namespace {

struct Format {
  rill_dtype dtype;
  int mantissa_bits;
  int exponent_bits;
};
const Format kF16{RILL_DTYPE_F16, 10, 5};
const Format kBF16{RILL_DTYPE_BF16, 7, 8};

// The value of a 16-bit pattern by the IEEE 754 definition. With inf_as_next,
// infinity stands for the value one step past the largest finite number, which
// is where round-to-nearest puts the overflow boundary.
double decode(const Format& f, uint16_t bits, bool inf_as_next = false) {
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int max_exponent = (1 << f.exponent_bits) - 1;
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  const int exponent = (bits >> f.mantissa_bits) & max_exponent;
  const uint32_t mantissa = bits & ((1u << f.mantissa_bits) - 1u);
  if (exponent == max_exponent) {
    if (mantissa != 0) return std::numeric_limits<double>::quiet_NaN();
    return inf_as_next ? sign * std::ldexp(1.0, bias + 1) : sign * std::numeric_limits<double>::infinity();
  }
  if (exponent == 0) return sign * std::ldexp(static_cast<double>(mantissa), 1 - bias - f.mantissa_bits);
  return sign * std::ldexp(1.0 + std::ldexp(static_cast<double>(mantissa), -f.mantissa_bits), exponent - bias);
}

bool is_nan_pattern(const Format& f, uint16_t bits) {
  const int max_exponent = (1 << f.exponent_bits) - 1;
  return ((bits >> f.mantissa_bits) & max_exponent) == max_exponent && (bits & ((1u << f.mantissa_bits) - 1u)) != 0;
}

struct Tensor {
  rill_context* ctx = nullptr;
  rill_tensor* t = nullptr;
  Tensor(rill_dtype dtype, size_t count) {
    REQUIRE(rill_context_create("[runtime]\nbackend = \"cpu\"\n", &ctx) == RILL_OK);
    const int64_t shape[1] = {static_cast<int64_t>(count)};
    REQUIRE(rill_tensor_create(ctx, dtype, 1, shape, &t) == RILL_OK);
  }
  ~Tensor() { rill_context_destroy(ctx); }
};

void check_decoding(const Format& f) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  Tensor tensor(f.dtype, all.size());
  std::vector<float> got(all.size());
  REQUIRE(rill_tensor_write(tensor.t, all.data(), all.size() * 2) == RILL_OK);
  REQUIRE(rill_tensor_read_f32(tensor.t, got.data(), got.size()) == RILL_OK);
  size_t wrong = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const double expected = decode(f, all[i]);
    const bool ok = std::isnan(expected) ? std::isnan(got[i]) : static_cast<double>(got[i]) == expected &&
                                                                      std::signbit(got[i]) == std::signbit(expected);
    if (!ok && wrong++ < 5) MESSAGE("pattern ", i, " read as ", got[i], ", expected ", expected);
  }
  CHECK(wrong == 0);
}

void check_encoding(const Format& f) {
  std::vector<float> inputs;
  // Every exact value, every midpoint between neighbours (the ties) and points
  // a quarter step either side of each midpoint.
  for (uint32_t i = 0; i < 0x7FFFu; ++i) {
    const auto bits = static_cast<uint16_t>(i);
    if (is_nan_pattern(f, bits) || std::isinf(decode(f, bits))) continue;
    const double low = decode(f, bits), high = decode(f, static_cast<uint16_t>(i + 1), true);
    for (double v : {low, (low + high) / 2, low + (high - low) / 4, low + 3 * (high - low) / 4}) {
      if (v > std::numeric_limits<float>::max()) continue;
      inputs.push_back(static_cast<float>(v));
      inputs.push_back(-static_cast<float>(v));
    }
  }
  std::mt19937 random(7);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 100000; ++i) {
    const uint32_t bits = any_bits(random);
    float v;
    std::memcpy(&v, &bits, sizeof(v));
    inputs.push_back(v);
  }
  const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(), 0.0f, -0.0f};
  inputs.insert(inputs.end(), std::begin(specials), std::end(specials));
  // NaNs whose payload lies only in the low bits that the conversion drops.
  for (uint32_t nan_bits : {0x7F800001u, 0xFF800001u, 0x7FC00000u, 0x7F801000u}) {
    float v;
    std::memcpy(&v, &nan_bits, sizeof(v));
    inputs.push_back(v);
  }

  Tensor tensor(f.dtype, inputs.size());
  std::vector<uint16_t> got(inputs.size());
  REQUIRE(rill_tensor_write_f32(tensor.t, inputs.data(), inputs.size()) == RILL_OK);
  REQUIRE(rill_tensor_read(tensor.t, got.data(), got.size() * 2) == RILL_OK);
  size_t wrong = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const float x = inputs[i];
    const uint16_t h = got[i];
    bool ok;
    if (std::isnan(x)) {
      ok = is_nan_pattern(f, h) && ((h & 0x8000u) != 0) == std::signbit(x);
    } else if (is_nan_pattern(f, h) || ((h & 0x8000u) != 0) != std::signbit(x)) {
      ok = false;
    } else {
      // h must be at least as close to x as its neighbours, and on a tie even.
      const double ax = std::fabs(static_cast<double>(x));
      const uint16_t magnitude = h & 0x7FFFu;
      const double mine = std::fabs(ax - std::fabs(decode(f, magnitude, true)));
      ok = !std::isinf(x) || std::isinf(decode(f, magnitude));
      if (!std::isinf(x)) {
        for (int step : {-1, 1}) {
          const int other = magnitude + step;
          if (other < 0 || is_nan_pattern(f, static_cast<uint16_t>(other))) continue;
          const double theirs = std::fabs(ax - std::fabs(decode(f, static_cast<uint16_t>(other), true)));
          if (theirs < mine || (theirs == mine && (magnitude & 1u) != 0)) ok = false;
        }
      }
    }
    if (!ok && wrong++ < 5) MESSAGE("input ", x, " encoded as pattern ", h);
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("f16: every pattern decodes to its value") { check_decoding(kF16); }
TEST_CASE("bf16: every pattern decodes to its value") { check_decoding(kBF16); }
TEST_CASE("f16: encoding rounds to nearest even") { check_encoding(kF16); }
TEST_CASE("bf16: encoding rounds to nearest even") { check_encoding(kBF16); }
