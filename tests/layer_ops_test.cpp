// The decoder-layer ops (rill_rope, rill_attention, rill_activation) against
// double-precision references written here from their definitions in rill.h,
// for f32/f16/bf16, plus their argument checks. The backend comes from
// RILL_TEST_BACKEND (default cpu); when it is unavailable or lacks the ops the
// test exits 77 (skipped).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "reference.h"
#include "rill.h"
#include "test_helpers.h"

namespace {

using rill_test::expect_failure;

// Skips the whole test program (exit 77) when the backend cannot be had or
// lacks the op, so that a missing backend is never reported as passing.
void skip_if_unsupported(rill_status status, const char* op) {
  if (status == RILL_ERROR_UNSUPPORTED) {
    std::printf("skipped: %s: %s\n", op, rill_last_error());
    std::exit(77);
  }
}

std::string backend_name() {
  const char* env = std::getenv("RILL_TEST_BACKEND");
  return env != nullptr && *env != '\0' ? env : "cpu";
}

struct Context {
  rill_context* ctx = nullptr;
  std::vector<rill_tensor*> tensors;
  Context() {
    const std::string config = "[runtime]\nbackend = \"" + backend_name() + "\"\n";
    const rill_status status = rill_context_create(config.c_str(), &ctx);
    if (status == RILL_ERROR_BACKEND_UNAVAILABLE) {
      std::printf("skipped: backend %s unavailable: %s\n", backend_name().c_str(), rill_last_error());
      std::exit(77);
    }
    REQUIRE_MESSAGE(status == RILL_OK, rill_last_error());
  }
  ~Context() {
    for (rill_tensor* t : tensors) rill_tensor_destroy(t);
    rill_context_destroy(ctx);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // A tensor filled with values (rounded to dtype on the way in).
  rill_tensor* tensor(std::vector<int64_t> shape, rill_dtype dtype, const std::vector<float>& values) {
    rill_tensor* t = rill_test::create_tensor(ctx, shape, dtype);
    tensors.push_back(t);
    if (!values.empty()) REQUIRE(rill_tensor_write_f32(t, values.data(), values.size()) == RILL_OK);
    return t;
  }
  static std::vector<float> read(const rill_tensor* t) {
    std::vector<float> out(rill_tensor_numel(t));
    REQUIRE(rill_tensor_read_f32(t, out.data(), out.size()) == RILL_OK);
    return out;
  }
};

std::vector<float> random_values(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

double nmse_limit(rill_dtype dtype) {
  switch (dtype) {
    case RILL_DTYPE_F32: return 1e-10;
    case RILL_DTYPE_F16: return 1e-6;
    default: return 1e-4;
  }
}

const rill_dtype kDtypes[] = {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16};

}  // namespace

TEST_CASE("rope matches the rotate-half definition, full and partial") {
  Context c;
  const int64_t tokens = 5, heads = 3, head_dim = 8;
  const std::vector<int32_t> positions = {0, 1, 7, 100, 4096};
  for (rill_dtype dtype : kDtypes) {
    for (int32_t rotary_dim : {8, 4}) {
      CAPTURE(rill_dtype_name(dtype));
      CAPTURE(rotary_dim);
      rill_tensor* x = c.tensor({tokens, heads, head_dim}, dtype, random_values(tokens * heads * head_dim, 3));
      const std::vector<float> input = Context::read(x);  // as the backend holds it
      const float theta = 10000.0f;
      const rill_status status = rill_rope(c.ctx, x, positions.data(), positions.size(), theta, rotary_dim);
      skip_if_unsupported(status, "rope");
      REQUIRE_MESSAGE(status == RILL_OK, rill_last_error());
      std::vector<double> expected(input.begin(), input.end());
      const int64_t half = rotary_dim / 2;
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t base = (t * heads + h) * head_dim;
          for (int64_t i = 0; i < half; ++i) {
            const double angle = positions[t] / std::pow(double{theta}, 2.0 * static_cast<double>(i) / rotary_dim);
            const double a = input[base + i], b = input[base + i + half];
            expected[base + i] = a * std::cos(angle) - b * std::sin(angle);
            expected[base + i + half] = b * std::cos(angle) + a * std::sin(angle);
          }
        }
      }
      CHECK(rill_ref::nmse(Context::read(x), expected) < nmse_limit(dtype));
    }
  }
}

TEST_CASE("attention: causal GQA prefill and decode with per-sequence lengths") {
  Context c;
  const int64_t batch = 2;
  struct Shape {
    int64_t queries, slots;
    std::vector<int32_t> lengths;  // empty: NULL
    int64_t q_heads = 4, kv_heads = 2, head_dim = 8;
  };
  // The last shapes: one KV head for all query heads, a head_dim that is no
  // multiple of a vector width, and caches longer than one key tile or chunk
  // (256) with lengths that differ per sequence by more than a chunk.
  for (const Shape& s : {Shape{5, 5, {}}, Shape{1, 7, {6, 2}}, Shape{3, 6, {5, 3}}, Shape{1, 600, {600, 37}, 3, 1, 37},
                         Shape{2, 530, {300, 529}, 2, 1, 20}}) {
    const int64_t q_heads = s.q_heads, kv_heads = s.kv_heads, head_dim = s.head_dim;
    for (rill_dtype dtype : kDtypes) {
      CAPTURE(rill_dtype_name(dtype));
      CAPTURE(s.queries);
      CAPTURE(s.slots);
      rill_tensor* q = c.tensor({batch, s.queries, q_heads, head_dim}, dtype,
                                random_values(batch * s.queries * q_heads * head_dim, 1));
      rill_tensor* k = c.tensor({batch, s.slots, kv_heads, head_dim}, dtype,
                                random_values(batch * s.slots * kv_heads * head_dim, 2));
      rill_tensor* v = c.tensor({batch, s.slots, kv_heads, head_dim}, dtype,
                                random_values(batch * s.slots * kv_heads * head_dim, 3));
      rill_tensor* out = c.tensor({batch, s.queries, q_heads, head_dim}, dtype, {});
      const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
      const rill_status status =
          rill_attention(c.ctx, q, k, v, s.lengths.empty() ? nullptr : s.lengths.data(), s.lengths.size(), scale, out);
      skip_if_unsupported(status, "attention");
      REQUIRE_MESSAGE(status == RILL_OK, rill_last_error());
      const std::vector<float> qf = Context::read(q), kf = Context::read(k), vf = Context::read(v);
      std::vector<double> expected(qf.size());
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t length = s.lengths.empty() ? s.slots : s.lengths[b];
        for (int64_t t = 0; t < s.queries; ++t) {
          for (int64_t h = 0; h < q_heads; ++h) {
            const int64_t kvh = h / (q_heads / kv_heads);
            const int64_t last = length - s.queries + t;
            std::vector<double> logits;
            for (int64_t j = 0; j <= last; ++j) {
              double dot = 0;
              for (int64_t e = 0; e < head_dim; ++e) {
                dot += double{qf[((b * s.queries + t) * q_heads + h) * head_dim + e]} *
                       kf[((b * s.slots + j) * kv_heads + kvh) * head_dim + e];
              }
              logits.push_back(dot * scale);
            }
            double max_logit = -INFINITY, sum = 0;
            for (double l : logits) max_logit = std::max(max_logit, l);
            for (double& l : logits) sum += (l = std::exp(l - max_logit));
            for (int64_t e = 0; e < head_dim; ++e) {
              double acc = 0;
              for (int64_t j = 0; j <= last; ++j)
                acc += logits[j] / sum * vf[((b * s.slots + j) * kv_heads + kvh) * head_dim + e];
              expected[((b * s.queries + t) * q_heads + h) * head_dim + e] = acc;
            }
          }
        }
      }
      CHECK(rill_ref::nmse(Context::read(out), expected) < nmse_limit(dtype));
    }
  }
}

TEST_CASE("activation: each function, plain and gated, in place") {
  Context c;
  const double sqrt_half = std::sqrt(0.5), tanh_c = std::sqrt(2.0 / M_PI);
  for (rill_dtype dtype : kDtypes) {
    for (rill_act_fn fn : {RILL_ACT_SILU, RILL_ACT_GELU, RILL_ACT_GELU_TANH, RILL_ACT_RELU}) {
      for (bool gated : {false, true}) {
        CAPTURE(rill_dtype_name(dtype));
        CAPTURE(fn);
        CAPTURE(gated);
        rill_tensor* x = c.tensor({7, 33}, dtype, random_values(7 * 33, 5, 2.0f));
        rill_tensor* up = gated ? c.tensor({7, 33}, dtype, random_values(7 * 33, 6)) : nullptr;
        const std::vector<float> xf = Context::read(x);
        const std::vector<float> uf = gated ? Context::read(up) : std::vector<float>();
        const rill_status status = rill_activation(c.ctx, fn, x, up, x);
        skip_if_unsupported(status, "activation");
        REQUIRE_MESSAGE(status == RILL_OK, rill_last_error());
        std::vector<double> expected(xf.size());
        for (size_t i = 0; i < xf.size(); ++i) {
          const double v = xf[i];
          double y = 0;
          switch (fn) {
            case RILL_ACT_SILU: y = v / (1 + std::exp(-v)); break;
            case RILL_ACT_GELU: y = 0.5 * v * (1 + std::erf(v * sqrt_half)); break;
            case RILL_ACT_GELU_TANH: y = 0.5 * v * (1 + std::tanh(tanh_c * (v + 0.044715 * v * v * v))); break;
            default: y = v > 0 ? v : 0; break;
          }
          expected[i] = gated ? y * uf[i] : y;
        }
        CHECK(rill_ref::nmse(Context::read(x), expected) < nmse_limit(dtype));
      }
    }
  }
}

TEST_CASE("decoder-layer ops reject bad arguments with a message naming them") {
  Context c;
  rill_tensor* x = c.tensor({2, 2, 8}, RILL_DTYPE_F32, std::vector<float>(32, 1.0f));
  const int32_t positions[2] = {0, 1}, negative[2] = {0, -1};
  expect_failure(rill_rope(c.ctx, x, positions, 2, 10000.0f, 5), RILL_ERROR_INVALID_ARGUMENT, {"rotary_dim", "5"});
  expect_failure(rill_rope(c.ctx, x, positions, 2, 10000.0f, 10), RILL_ERROR_INVALID_ARGUMENT, {"rotary_dim", "10"});
  expect_failure(rill_rope(c.ctx, x, nullptr, 0, 10000.0f, 8), RILL_ERROR_INVALID_ARGUMENT, {"positions"});
  expect_failure(rill_rope(c.ctx, x, positions, 1, 10000.0f, 8), RILL_ERROR_INVALID_ARGUMENT, {"position_count", "2"});
  expect_failure(rill_rope(c.ctx, x, negative, 2, 10000.0f, 8), RILL_ERROR_INVALID_ARGUMENT, {"positions[1]"});
  expect_failure(rill_rope(c.ctx, x, positions, 2, 0.0f, 8), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_rope: theta: expected a finite value > 0, got 0"});
  expect_failure(rill_rope(c.ctx, x, positions, 2, NAN, 8), RILL_ERROR_INVALID_ARGUMENT, {"theta", "finite"});
  expect_failure(rill_rope(c.ctx, x, nullptr, 2, 10000.0f, 8), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_rope: positions: expected an array, got NULL"});
  expect_failure(rill_rope(c.ctx, x, negative, 2, 10000.0f, 8), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_rope: positions[1]: expected >= 0, got -1"});

  rill_tensor* q = c.tensor({1, 2, 3, 8}, RILL_DTYPE_F32, std::vector<float>(48, 0.5f));
  rill_tensor* k = c.tensor({1, 4, 2, 8}, RILL_DTYPE_F32, std::vector<float>(64, 0.5f));
  rill_tensor* k16 = c.tensor({1, 4, 1, 8}, RILL_DTYPE_F16, std::vector<float>(32, 0.5f));
  rill_tensor* k1 = c.tensor({1, 4, 1, 8}, RILL_DTYPE_F32, std::vector<float>(32, 0.5f));
  rill_tensor* out = c.tensor({1, 2, 3, 8}, RILL_DTYPE_F32, {});
  const int32_t too_long[1] = {5}, too_short[1] = {1}, fine[1] = {3};
  expect_failure(rill_attention(c.ctx, q, k, k, fine, 1, 0.3f, out), RILL_ERROR_SHAPE, {"KV heads", "3"});
  expect_failure(rill_attention(c.ctx, q, k16, k16, fine, 1, 0.3f, out), RILL_ERROR_DTYPE, {"k", "f16"});
  expect_failure(rill_attention(c.ctx, q, k1, k1, too_long, 1, 0.3f, out), RILL_ERROR_INVALID_ARGUMENT,
                 {"kv_lengths[0]", "5"});
  expect_failure(rill_attention(c.ctx, q, k1, k1, too_short, 1, 0.3f, out), RILL_ERROR_INVALID_ARGUMENT,
                 {"kv_lengths[0]", "1"});
  expect_failure(rill_attention(c.ctx, q, k1, k1, fine, 2, 0.3f, out), RILL_ERROR_INVALID_ARGUMENT,
                 {"kv_length_count"});
  expect_failure(rill_attention(c.ctx, q, k1, k1, fine, 1, -1.0f, out), RILL_ERROR_INVALID_ARGUMENT, {"scale"});
  expect_failure(rill_attention(c.ctx, q, k1, k1, fine, 1, 0.0f, out), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_attention: scale: expected a finite value > 0, got 0"});
  expect_failure(rill_attention(c.ctx, q, k1, k1, fine, 1, INFINITY, out), RILL_ERROR_INVALID_ARGUMENT, {"scale"});
  expect_failure(rill_attention(c.ctx, q, k1, k1, fine, 1, 0.3f, q), RILL_ERROR_INVALID_ARGUMENT, {"out"});

  rill_tensor* other = c.tensor({2, 16}, RILL_DTYPE_F32, std::vector<float>(32, 1.0f));
  expect_failure(rill_activation(c.ctx, static_cast<rill_act_fn>(9), x, nullptr, x), RILL_ERROR_INVALID_ARGUMENT,
                 {"fn", "9"});
  expect_failure(rill_activation(c.ctx, RILL_ACT_SILU, x, other, x), RILL_ERROR_SHAPE, {"up"});
  expect_failure(rill_activation(nullptr, RILL_ACT_SILU, x, nullptr, x), RILL_ERROR_INVALID_ARGUMENT, {"ctx"});
}
