// The argument checks of the decoder-layer ops (rill_rope, rill_attention,
// rill_activation); their results are checked by the conformance suite. The
// backend comes from RILL_TEST_BACKEND (default cpu); when it is unavailable
// the test exits 77 (skipped).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rill.h"
#include "test_helpers.h"

namespace {

using rill_test::expect_failure;

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
};

}  // namespace

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
  const float freqs[4] = {1.0f, 0.1f, 0.01f, 0.001f}, zero_freq[4] = {1.0f, 0.0f, 0.01f, 0.001f};
  expect_failure(rill_rope_freqs(c.ctx, x, positions, 2, freqs, 3, 1.0f, 8), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_rope_freqs: inv_freq_count: expected rotary_dim / 2 = 4, got 3"});
  expect_failure(rill_rope_freqs(c.ctx, x, positions, 2, nullptr, 4, 1.0f, 8), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_rope_freqs: inv_freq: expected an array, got NULL"});
  expect_failure(rill_rope_freqs(c.ctx, x, positions, 2, zero_freq, 4, 1.0f, 8), RILL_ERROR_INVALID_ARGUMENT,
                 {"inv_freq[1]", "> 0", "got 0"});
  expect_failure(rill_rope_freqs(c.ctx, x, positions, 2, freqs, 4, 0.0f, 8), RILL_ERROR_INVALID_ARGUMENT,
                 {"attention_factor", "> 0", "got 0"});
  expect_failure(rill_rope_freqs(c.ctx, x, positions, 2, freqs, 4, INFINITY, 8), RILL_ERROR_INVALID_ARGUMENT,
                 {"attention_factor", "finite"});
  expect_failure(rill_rope_freqs(c.ctx, x, positions, 2, freqs, 4, 1.0f, 7), RILL_ERROR_INVALID_ARGUMENT,
                 {"rotary_dim", "7"});
  expect_failure(rill_rope_freqs(c.ctx, x, negative, 2, freqs, 4, 1.0f, 8), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_rope_freqs: positions[1]: expected >= 0, got -1"});

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

  // rill_attention_ex: the same operand checks, then params.
  const rill_attention_params good{sizeof(rill_attention_params), 0.3f, 2, 1.5f};
  CHECK_MESSAGE(rill_attention_ex(c.ctx, q, k1, k1, fine, 1, &good, out) == RILL_OK, rill_last_error());
  expect_failure(rill_attention_ex(c.ctx, q, k, k, fine, 1, &good, out), RILL_ERROR_SHAPE, {"KV heads", "3"});
  expect_failure(rill_attention_ex(c.ctx, q, k1, k1, fine, 1, nullptr, out), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_attention_ex: params: expected non-NULL, got NULL"});
  rill_attention_params bad = good;
  bad.struct_size = 4;
  expect_failure(rill_attention_ex(c.ctx, q, k1, k1, fine, 1, &bad, out), RILL_ERROR_INVALID_ARGUMENT,
                 {"params->struct_size", "at least 8", "got 4"});
  bad = good;
  bad.scale = 0.0f;
  expect_failure(rill_attention_ex(c.ctx, q, k1, k1, fine, 1, &bad, out), RILL_ERROR_INVALID_ARGUMENT,
                 {"params->scale", "got 0"});
  bad = good;
  bad.window = -1;
  expect_failure(rill_attention_ex(c.ctx, q, k1, k1, fine, 1, &bad, out), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_attention_ex: params->window: expected >= 0 (0 = no window), got -1"});
  for (float softcap : {-1.0f, NAN, INFINITY}) {
    bad = good;
    bad.softcap = softcap;
    expect_failure(rill_attention_ex(c.ctx, q, k1, k1, fine, 1, &bad, out), RILL_ERROR_INVALID_ARGUMENT,
                   {"params->softcap", "finite and >= 0"});
  }
  // A caller that knows only struct_size and scale gets neither window nor soft-cap.
  bad = good;
  bad.struct_size = offsetof(rill_attention_params, window);
  bad.window = -1;
  CHECK_MESSAGE(rill_attention_ex(c.ctx, q, k1, k1, fine, 1, &bad, out) == RILL_OK, rill_last_error());

  rill_tensor* other = c.tensor({2, 16}, RILL_DTYPE_F32, std::vector<float>(32, 1.0f));
  expect_failure(rill_activation(c.ctx, static_cast<rill_act_fn>(9), x, nullptr, x), RILL_ERROR_INVALID_ARGUMENT,
                 {"fn", "9"});
  expect_failure(rill_activation(c.ctx, RILL_ACT_SILU, x, other, x), RILL_ERROR_SHAPE, {"up"});
  expect_failure(rill_activation(nullptr, RILL_ACT_SILU, x, nullptr, x), RILL_ERROR_INVALID_ARGUMENT, {"ctx"});
}
