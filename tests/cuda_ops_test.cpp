// CUDA-specific paths the cross-backend conformance suite does not reach:
// the launch shapes for many rows, rows too long to park in shared memory,
// decode attention split over long KV caches, attention's GQA groups sharing
// K/V loads (16-byte and element loads), prefill attention on tensor cores, the reuse of the page-locked
// staging for RoPE positions, writes from pinned memory,
// device-memory exhaustion leaving the context usable, a GEMM with a bias on
// several leading dims, and the requests the CUDA backend reports as
// unsupported, and the second passes of the residual_add, RoPE and
// activation grids, and cuBLASLt's fallback to its next algorithm. Results
// are compared with the CPU backend's (which the
// conformance suite checks against a double reference) and, for the ops
// whose reference is cheap, with that reference too, with the limits of
// tests/support/tolerance.h.
// Without a usable CUDA device the test reports skipped (77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "reference.h"
#include "rill.h"
#include "test_helpers.h"
#include "tolerance.h"

namespace {

rill_context* g_cuda = nullptr;
rill_context* g_cpu = nullptr;

// The CUDA result against the CPU backend's, with the tolerance module's limits.
void check_close(const std::vector<float>& cuda, const std::vector<float>& cpu, rill_dtype dtype) {
  const rill_tol::Score score = rill_tol::score(cuda, std::vector<double>(cpu.begin(), cpu.end()));
  CHECK_MESSAGE(rill_tol::within(score, dtype), rill_tol::describe(score, dtype));
}

std::vector<float> random_values(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

size_t numel(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// A tensor on one context, filled with values, destroyed at scope end.
struct Tensor {
  rill_tensor* t = nullptr;
  Tensor(rill_context* ctx, rill_dtype dtype, const std::vector<int64_t>& shape, const std::vector<float>& values) {
    REQUIRE_MESSAGE(rill_tensor_create(ctx, dtype, static_cast<int32_t>(shape.size()), shape.data(), &t) == RILL_OK,
                    rill_last_error());
    REQUIRE_MESSAGE(rill_tensor_write_f32(t, values.data(), values.size()) == RILL_OK, rill_last_error());
  }
  ~Tensor() { rill_tensor_destroy(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  std::vector<float> read() const {
    std::vector<float> v(rill_tensor_numel(t));
    REQUIRE_MESSAGE(rill_tensor_read_f32(t, v.data(), v.size()) == RILL_OK, rill_last_error());
    return v;
  }
};

// values rounded to dtype, so that the double reference sees what the
// backends store.
std::vector<float> rounded(std::vector<float> values, rill_dtype dtype) {
  for (float& v : values) v = static_cast<float>(rill_ref::round_to_dtype(v, dtype));
  return values;
}

// The CUDA result against the double reference and against the CPU backend's.
void check_both(const std::vector<float>& cuda, const std::vector<float>& cpu, const std::vector<double>& reference,
                rill_dtype dtype) {
  const rill_tol::Score score = rill_tol::score(cuda, reference);
  CHECK_MESSAGE(rill_tol::within(score, dtype), "against the double reference: " << rill_tol::describe(score, dtype));
  check_close(cuda, cpu, dtype);
}

// rill_attention_ex from the same inputs on the CUDA and on the CPU context:
// {CUDA's result, the CPU's}.
struct AttentionInputs {
  rill_dtype dtype;
  std::vector<int64_t> q_shape, kv_shape;
  std::vector<float> q, k, v;
  std::vector<int32_t> lengths;
  rill_attention_params params;
};

std::array<std::vector<float>, 2> attention_on_both(const AttentionInputs& in) {
  std::array<std::vector<float>, 2> results;
  rill_context* contexts[2] = {g_cuda, g_cpu};
  for (int i = 0; i < 2; ++i) {
    Tensor tq(contexts[i], in.dtype, in.q_shape, in.q), tk(contexts[i], in.dtype, in.kv_shape, in.k);
    Tensor tv(contexts[i], in.dtype, in.kv_shape, in.v), out(contexts[i], in.dtype, in.q_shape, in.q);
    REQUIRE_MESSAGE(rill_attention_ex(contexts[i], tq.t, tk.t, tv.t, in.lengths.data(), in.lengths.size(), &in.params,
                                      out.t) == RILL_OK,
                    rill_last_error());
    results[static_cast<size_t>(i)] = out.read();
  }
  return results;
}

// Runs fused add+RMSNorm or add+LayerNorm on both backends from the same
// inputs and compares x and the residual.
void check_fused(rill_dtype dtype, const std::vector<int64_t>& shape, bool layer) {
  const int64_t d = shape.back();
  const std::vector<float> x = random_values(numel(shape), 1), residual = random_values(numel(shape), 2);
  const std::vector<float> gain = random_values(static_cast<size_t>(d), 3), weight = random_values(static_cast<size_t>(d), 4);
  const std::vector<float> bias = random_values(static_cast<size_t>(d), 5);
  std::vector<float> results[2][2];
  rill_context* contexts[2] = {g_cuda, g_cpu};
  for (int i = 0; i < 2; ++i) {
    Tensor tx(contexts[i], dtype, shape, x), tr(contexts[i], dtype, shape, residual);
    Tensor tg(contexts[i], dtype, {d}, gain), tw(contexts[i], dtype, {d}, weight), tb(contexts[i], dtype, {d}, bias);
    const rill_status status =
        layer ? rill_fused_add_layer_norm(contexts[i], tx.t, tr.t, tg.t, tw.t, tb.t, 1e-5f, 0.5f, 2.0f)
              : rill_fused_add_rms_norm(contexts[i], tx.t, tr.t, tg.t, tw.t, 1e-6f, 0.5f, 2.0f);
    REQUIRE_MESSAGE(status == RILL_OK, rill_last_error());
    results[i][0] = tx.read();
    results[i][1] = tr.read();
  }
  check_close(results[0][1], results[1][1], dtype);
  check_close(results[0][0], results[1][0], dtype);
}

}  // namespace

TEST_CASE("fused add+norm over many rows (the launch shape for prefill) matches the CPU backend") {
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{1024, 4096}, {2, 600, 33}, {700, 4095}}) {
      INFO(std::string(rill_dtype_name(dtype)) << " [" << shape.front() << ".." << shape.back() << "]");
      check_fused(dtype, shape, false);
      check_fused(dtype, shape, true);
    }
  }
}

TEST_CASE("rows too long for shared memory (re-read from device memory) match the CPU backend") {
  // A row is parked in shared memory when it fits the block's opt-in limit
  // (227 KB on an H200, the largest of current GPUs): 120000 elements are
  // 240 KB in f16 and bf16 and 480 KB in f32, so every dtype re-reads.
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    INFO(std::string(rill_dtype_name(dtype)));
    check_fused(dtype, {3, 120000}, false);
    check_fused(dtype, {3, 120000}, true);
  }
}

TEST_CASE("more rows than one pass of the norm grid covers match the CPU backend") {
  // The grid holds at most 256 row groups per SM, each of up to 8 rows for
  // short rows: 400000 rows of 3 are 50000 groups, more than one pass on
  // any GPU with fewer than 196 SMs (H200: 132, B200: 148).
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    INFO(std::string(rill_dtype_name(dtype)));
    check_fused(dtype, {400000, 3}, false);
    check_fused(dtype, {400000, 3}, true);
  }
}

TEST_CASE("decode row counts 1 to 64 match the CPU backend") {
  for (int64_t rows : {1, 2, 5, 31, 64}) {
    INFO("rows " << rows);
    check_fused(RILL_DTYPE_BF16, {rows, 4096}, false);
    check_fused(RILL_DTYPE_F16, {rows, 5120}, true);
  }
}

TEST_CASE("GEMM with a bias over several leading dims matches the CPU backend, NaNs in out ignored with beta 0") {
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    INFO(std::string(rill_dtype_name(dtype)));
    const std::vector<int64_t> a_shape = {3, 100, 512}, w_shape = {1000, 512}, out_shape = {3, 100, 1000};
    const std::vector<float> a = random_values(numel(a_shape), 6), w = random_values(numel(w_shape), 7);
    const std::vector<float> bias = random_values(1000, 8);
    const std::vector<float> nans(numel(out_shape), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> results[2];
    rill_context* contexts[2] = {g_cuda, g_cpu};
    for (int i = 0; i < 2; ++i) {
      Tensor ta(contexts[i], dtype, a_shape, a), tw(contexts[i], dtype, w_shape, w);
      Tensor tb(contexts[i], dtype, {1000}, bias), out(contexts[i], dtype, out_shape, nans);
      REQUIRE_MESSAGE(rill_gemm(contexts[i], ta.t, tw.t, tb.t, 0.5f, 0.0f, out.t) == RILL_OK, rill_last_error());
      results[i] = out.read();
    }
    // TF32 is off by default, so f32 differs from the CPU's only in the
    // summation order over K = 512.
    check_close(results[0], results[1], dtype);
  }
}

TEST_CASE("residual_add past one pass of its grid, in rows and within a row, matches the CPU and the reference") {
  // Blocks take 256 threads over a row's packs and rows, at most 16 blocks
  // per SM: 400000 rows of 3 need several passes over rows, rows of 3 Mi f32
  // (786432 packs, 3072 blocks of packs) several passes within a row on GPUs
  // with fewer than 192 SMs; D = 4099 is not a multiple of the pack.
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{400000, 3}, {2, int64_t{3} << 20}, {5, 4099}}) {
      INFO(std::string(rill_dtype_name(dtype)) << " [" << shape.front() << ", " << shape.back() << "]");
      const int64_t rows = shape.front(), d = shape.back();
      const std::vector<float> residual = rounded(random_values(numel(shape), 40), dtype);
      const std::vector<float> update = rounded(random_values(numel(shape), 41), dtype);
      const std::vector<float> gain = rounded(random_values(static_cast<size_t>(d), 42), dtype);
      std::vector<float> results[2];
      rill_context* contexts[2] = {g_cuda, g_cpu};
      for (int i = 0; i < 2; ++i) {
        Tensor tr(contexts[i], dtype, shape, residual), tu(contexts[i], dtype, shape, update);
        Tensor tg(contexts[i], dtype, {d}, gain);
        REQUIRE_MESSAGE(rill_residual_add(contexts[i], tr.t, tu.t, tg.t, 0.5f, 2.0f) == RILL_OK, rill_last_error());
        results[i] = tr.read();
      }
      check_both(results[0], results[1], rill_ref::residual_add(residual, update, gain, 0.5f, 2.0f, rows, d), dtype);
    }
  }
}

TEST_CASE("rope past one pass of its grid (tokens, heads, pairs) matches the CPU and the reference") {
  // Tokens go in the grid's y (65535 at most, then further passes), heads in
  // blocks of 256 / min(128, pairs) threads, pairs past 128 in a second pass
  // of a thread's loop: 70000 tokens, 67 heads, head_dim 512.
  struct Case {
    int64_t tokens, heads, head_dim, rotary_dim;
  };
  for (const Case& c : {Case{70000, 2, 8, 8}, Case{3, 67, 64, 32}, Case{2, 3, 512, 512}}) {
    for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_BF16}) {
      INFO(std::string(rill_dtype_name(dtype)) << " tokens " << c.tokens << " heads " << c.heads << " head_dim "
                                               << c.head_dim << " rotary_dim " << c.rotary_dim);
      const std::vector<int64_t> shape = {c.tokens, c.heads, c.head_dim};
      const std::vector<float> x = rounded(random_values(numel(shape), 43), dtype);
      std::vector<int32_t> positions(static_cast<size_t>(c.tokens));
      for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int32_t>(i * 7 + 3);
      std::vector<float> results[2];
      rill_context* contexts[2] = {g_cuda, g_cpu};
      for (int i = 0; i < 2; ++i) {
        Tensor tx(contexts[i], dtype, shape, x);
        REQUIRE_MESSAGE(rill_rope(contexts[i], tx.t, positions.data(), positions.size(), 10000.0f,
                                  static_cast<int32_t>(c.rotary_dim)) == RILL_OK,
                        rill_last_error());
        results[i] = tx.read();
      }
      check_both(results[0], results[1],
                 rill_ref::rope(x, positions, c.heads, c.head_dim, 10000.0, c.rotary_dim), dtype);
    }
  }
}

TEST_CASE("activation in 16-byte packs with a tail, past one pass of its grid, matches the CPU and the reference") {
  // At most 32 blocks of 256 threads per SM, one pack each per pass: 5 Mi + 3
  // f32 (4 per pack) need a second pass below 160 SMs, and leave a tail of 3.
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_BF16}) {
    for (int64_t count : {(int64_t{5} << 20) + 3, int64_t{1001}}) {
      INFO(std::string(rill_dtype_name(dtype)) << " count " << count);
      const std::vector<float> x = rounded(random_values(static_cast<size_t>(count), 44), dtype);
      const std::vector<float> up = rounded(random_values(static_cast<size_t>(count), 45), dtype);
      std::vector<float> results[2];
      rill_context* contexts[2] = {g_cuda, g_cpu};
      for (int i = 0; i < 2; ++i) {
        Tensor tx(contexts[i], dtype, {count}, x), tu(contexts[i], dtype, {count}, up);
        Tensor out(contexts[i], dtype, {count}, x);
        REQUIRE_MESSAGE(rill_activation(contexts[i], RILL_ACT_SILU, tx.t, tu.t, out.t) == RILL_OK, rill_last_error());
        results[i] = out.read();
      }
      check_both(results[0], results[1], rill_ref::activation(RILL_ACT_SILU, x, up), dtype);
    }
  }
}

TEST_CASE("device memory exhaustion is RILL_ERROR_OUT_OF_MEMORY and the context stays usable") {
  const int64_t huge[2] = {int64_t{1} << 20, int64_t{1} << 20};  // 4 TiB of f32
  rill_tensor* t = nullptr;
  CHECK(rill_tensor_create(g_cuda, RILL_DTYPE_F32, 2, huge, &t) == RILL_ERROR_OUT_OF_MEMORY);
  CHECK(t == nullptr);
  CHECK(std::string(rill_last_error()).find("out of memory") != std::string::npos);
  check_fused(RILL_DTYPE_F32, {4, 256}, false);
  REQUIRE(rill_context_synchronize(g_cuda) == RILL_OK);
}

TEST_CASE("attention with head_dim above 256 is RILL_ERROR_UNSUPPORTED, naming head_dim") {
  const std::vector<int64_t> shape = {1, 2, 1, 512};
  const std::vector<float> values = random_values(numel(shape), 9);
  Tensor q(g_cuda, RILL_DTYPE_F32, shape, values), k(g_cuda, RILL_DTYPE_F32, shape, values);
  Tensor v(g_cuda, RILL_DTYPE_F32, shape, values), out(g_cuda, RILL_DTYPE_F32, shape, values);
  const int32_t lengths[1] = {2};
  CHECK(rill_attention(g_cuda, q.t, k.t, v.t, lengths, 1, 0.05f, out.t) == RILL_ERROR_UNSUPPORTED);
  CHECK(std::string(rill_last_error()).find("head_dim") != std::string::npos);
}

TEST_CASE("decode attention over long caches (the KV walk split and merged) matches the CPU backend") {
  // One query per sequence leaves B * heads = 16 rows, far fewer than two
  // blocks per SM: the cache is split into chunks of >= 256 slots. The
  // sequences' lengths differ, so the short one leaves its last splits empty;
  // a sliding window narrows the walk; a 3-token prefill splits as well.
  const int64_t batch = 2, heads = 8, kv_heads = 2, slots = 3000;
  struct Case {
    int64_t queries;
    int32_t window;
    float softcap;
  };
  for (const Case& c : {Case{1, 0, 0.0f}, Case{1, 700, 0.0f}, Case{3, 0, 30.0f}}) {
    for (int64_t head_dim : {64, 128, 256}) {
      INFO("queries " << c.queries << ", window " << c.window << ", head_dim " << head_dim);
      const std::vector<int64_t> q_shape = {batch, c.queries, heads, head_dim};
      const std::vector<int64_t> kv_shape = {batch, slots, kv_heads, head_dim};
      const std::vector<float> q = random_values(numel(q_shape), 10), k = random_values(numel(kv_shape), 11);
      const std::vector<float> v = random_values(numel(kv_shape), 12);
      const std::array<std::vector<float>, 2> results = attention_on_both(
          {RILL_DTYPE_F32, q_shape, kv_shape, q, k, v, {static_cast<int32_t>(slots), 1111},
           {sizeof(rill_attention_params), 0.1f, c.window, c.softcap}});
      check_close(results[0], results[1], RILL_DTYPE_F32);
    }
  }
}

TEST_CASE("attention sharing K/V loads across a GQA group (MQA, 4 and 7 heads) matches the CPU and the reference") {
  // A block serves up to 8 query heads of one KV head: 7 heads per KV head
  // (a group that is no power of two) fill one block partly, MQA's 12 heads
  // take a full block and a partial one. K and V move in 16-byte packs for
  // head_dim 64/128/256 and element by element for 98 (no multiple of a
  // pack in any dtype). The KV lengths are odd; one query per sequence
  // splits the walk; 140 queries of 2 sequences (560 blocks) fill any GPU of
  // up to 280 SMs without a split.
  struct Group {
    int64_t q_heads, kv_heads;
  };
  struct Case {
    int64_t queries;
    int32_t window;
    float softcap;
  };
  const int64_t batch = 2, slots = 1537;
  const std::vector<int32_t> lengths = {1537, 333};
  for (const Group& g : {Group{12, 1}, Group{8, 2}, Group{14, 2}}) {
    for (const Case& c : {Case{1, 0, 0.0f}, Case{1, 301, 20.0f}, Case{140, 0, 0.0f}}) {
      for (int64_t head_dim : {64, 98, 128, 256}) {
        for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
          if (c.queries > 1 && (head_dim != 128 || dtype != RILL_DTYPE_BF16)) continue;  // one prefill shape
          INFO(rill_dtype_name(dtype) << " q_heads " << g.q_heads << " kv_heads " << g.kv_heads << " head_dim "
                                      << head_dim << " queries " << c.queries << " window " << c.window
                                      << " softcap " << c.softcap);
          const std::vector<int64_t> q_shape = {batch, c.queries, g.q_heads, head_dim};
          const std::vector<int64_t> kv_shape = {batch, slots, g.kv_heads, head_dim};
          const std::vector<float> q = rounded(random_values(numel(q_shape), 50), dtype);
          const std::vector<float> k = rounded(random_values(numel(kv_shape), 51), dtype);
          const std::vector<float> v = rounded(random_values(numel(kv_shape), 52), dtype);
          const float scale = 0.1f;
          const std::array<std::vector<float>, 2> results = attention_on_both(
              {dtype, q_shape, kv_shape, q, k, v, lengths, {sizeof(rill_attention_params), scale, c.window, c.softcap}});
          const rill_ref::AttentionShape shape{batch, c.queries, slots, g.q_heads, g.kv_heads, head_dim};
          check_both(results[0], results[1],
                     rill_ref::attention(q, k, v, shape, lengths, scale, c.window, c.softcap), dtype);
        }
      }
    }
  }
}

TEST_CASE("prefill attention on tensor cores (f16/bf16, head_dim 64/128/256) matches the CPU and the reference") {
  // Each case reaches the tensor-core kernel (cuda_flash_attention.cu): 16 or
  // more queries, f16 or bf16, head_dim 64/128/256. 100 queries leave a
  // partial tile of 64 queries; 333, 150 and 16 slots partial tiles of 64 (or
  // 32) keys. Sequence 0 holds more slots than queries, so its queries sit
  // offset into the cache (causal from position 233); sequence 1 is a plain
  // prefill. The window (50) starts rows between key tiles, and cuts some of
  // a tile's rows but not others; the soft-cap bends most logits; groups of
  // 4 query heads per KV head and MQA. 16 queries: the smallest count the
  // kernel takes.
  struct Case {
    int64_t batch, queries, slots, q_heads, kv_heads;
    std::vector<int32_t> lengths;
    int32_t window;
    float softcap;
  };
  const std::vector<Case> cases = {
      {2, 100, 333, 8, 2, {333, 100}, 0, 0.0f},
      {2, 100, 333, 4, 1, {333, 150}, 50, 5.0f},
      {1, 16, 16, 2, 2, {16}, 0, 0.0f},
  };
  for (const Case& c : cases) {
    for (int64_t head_dim : {64, 128, 256}) {
      for (rill_dtype dtype : {RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
        INFO(rill_dtype_name(dtype) << " head_dim " << head_dim << " batch " << c.batch << " queries " << c.queries
                                    << " q_heads " << c.q_heads << " kv_heads " << c.kv_heads << " window "
                                    << c.window << " softcap " << c.softcap);
        const std::vector<int64_t> q_shape = {c.batch, c.queries, c.q_heads, head_dim};
        const std::vector<int64_t> kv_shape = {c.batch, c.slots, c.kv_heads, head_dim};
        const std::vector<float> q = rounded(random_values(numel(q_shape), 70), dtype);
        const std::vector<float> k = rounded(random_values(numel(kv_shape), 71), dtype);
        const std::vector<float> v = rounded(random_values(numel(kv_shape), 72), dtype);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        const std::array<std::vector<float>, 2> results = attention_on_both(
            {dtype, q_shape, kv_shape, q, k, v, c.lengths, {sizeof(rill_attention_params), scale, c.window, c.softcap}});
        const rill_ref::AttentionShape shape{c.batch, c.queries, c.slots, c.q_heads, c.kv_heads, head_dim};
        check_both(results[0], results[1],
                   rill_ref::attention(q, k, v, shape, c.lengths, scale, c.window, c.softcap), dtype);
      }
    }
  }
}

namespace {

// A bf16 GEMM [64, 1024] x [512, 1024]^T on ctx from fixed inputs: rill_gemm's
// status, and the result in *result when it ran.
rill_status gemm_on(rill_context* ctx, std::vector<float>* result) {
  const std::vector<int64_t> a_shape = {64, 1024}, w_shape = {512, 1024}, out_shape = {64, 512};
  const std::vector<float> a = rounded(random_values(numel(a_shape), 60), RILL_DTYPE_BF16);
  const std::vector<float> w = rounded(random_values(numel(w_shape), 61), RILL_DTYPE_BF16);
  Tensor ta(ctx, RILL_DTYPE_BF16, a_shape, a), tw(ctx, RILL_DTYPE_BF16, w_shape, w);
  Tensor out(ctx, RILL_DTYPE_BF16, out_shape, std::vector<float>(numel(out_shape), 0.0f));
  const rill_status status = rill_gemm(ctx, ta.t, tw.t, nullptr, 1.0f, 0.0f, out.t);
  if (status == RILL_OK) *result = out.read();
  return status;
}

std::vector<std::string> g_log;
void keep_log(rill_log_level, const char* message, void*) { g_log.emplace_back(message); }

// A CUDA context made while RILL_CUDA_TEST_REFUSE_GEMM_ALGOS=refused.
rill_context* refusing_context(int refused) {
  rill_test::set_env("RILL_CUDA_TEST_REFUSE_GEMM_ALGOS", std::to_string(refused));
  rill_context* ctx = nullptr;
  const rill_status status = rill_context_create("[runtime]\nbackend = \"cuda\"\n", &ctx);
  rill_test::unset_env("RILL_CUDA_TEST_REFUSE_GEMM_ALGOS");
  REQUIRE_MESSAGE(status == RILL_OK, rill_last_error());
  return ctx;
}

}  // namespace

TEST_CASE("a GEMM whose first cuBLASLt algorithm is refused runs the next one and matches the CPU and the reference") {
  std::vector<float> expected_cpu, cuda;
  REQUIRE(gemm_on(g_cpu, &expected_cpu) == RILL_OK);
  const std::vector<float> a = rounded(random_values(64 * 1024, 60), RILL_DTYPE_BF16);
  const std::vector<float> w = rounded(random_values(512 * 1024, 61), RILL_DTYPE_BF16);
  const std::vector<double> reference = rill_ref::gemm(a, w, {}, 1.0f, 0.0f, {}, 64, 512, 1024);

  rill_context* refusing = refusing_context(1);
  g_log.clear();
  REQUIRE(rill_set_log_callback(keep_log, nullptr, RILL_LOG_DEBUG) == RILL_OK);
  const rill_status status = gemm_on(refusing, &cuda);
  REQUIRE(rill_set_log_callback(nullptr, nullptr, RILL_LOG_DEBUG) == RILL_OK);
  // cuBLASLt offers up to 8 algorithms for this shape; with one alone the
  // fallback has nothing to go to, and the call must say so.
  if (status != RILL_OK) {
    CHECK_MESSAGE(std::string(rill_last_error()).find("each of 1 algorithms") != std::string::npos, rill_last_error());
  } else {
    bool fell_back = false;
    for (const std::string& line : g_log) fell_back |= line.find("refused 1 of") != std::string::npos &&
                                                       line.find("algorithm 2 ran") != std::string::npos;
    CHECK_MESSAGE(fell_back, "no log line says that algorithm 2 ran after algorithm 1 was refused");
    check_both(cuda, expected_cpu, reference, RILL_DTYPE_BF16);
    // The algorithm that ran is tried first from then on: the same result again.
    std::vector<float> again;
    REQUIRE(gemm_on(refusing, &again) == RILL_OK);
    CHECK(again == cuda);
  }
  rill_context_destroy(refusing);

  // Every algorithm refused: an error naming how many were tried, and no result.
  rill_context* refusing_all = refusing_context(1000);
  CHECK(gemm_on(refusing_all, &cuda) != RILL_OK);
  CHECK_MESSAGE(std::string(rill_last_error()).find("algorithms the heuristic offered") != std::string::npos,
                rill_last_error());
  rill_context_destroy(refusing_all);
}

TEST_CASE("RoPE positions of 200 calls queued behind a long GEMM (staging slots reused) match the CPU backend") {
  // The positions reach the device through 64 page-locked staging slots,
  // taken in turn; a slot is refilled only once the copy from it has ended.
  // Large GEMMs first keep the device busy while the host queues 200
  // calls, each with its own positions, so slots are reused while copies
  // from them are still queued.
  const std::vector<int64_t> a_shape = {2048, 4096}, w_shape = {4096, 4096};
  const std::vector<float> a = random_values(numel(a_shape), 70), w = random_values(numel(w_shape), 71);
  Tensor ta(g_cuda, RILL_DTYPE_F32, a_shape, a), tw(g_cuda, RILL_DTYPE_F32, w_shape, w);
  Tensor busy(g_cuda, RILL_DTYPE_F32, {2048, 4096}, std::vector<float>(2048 * 4096, 0.0f));
  REQUIRE(rill_context_synchronize(g_cuda) == RILL_OK);
  constexpr int kCalls = 200;
  const std::vector<int64_t> shape = {3, 2, 64};
  const std::vector<float> x = random_values(numel(shape), 72);
  std::vector<std::vector<float>> results[2];
  rill_context* contexts[2] = {g_cuda, g_cpu};
  for (int i = 0; i < 2; ++i) {
    for (int gemm = 0; contexts[i] == g_cuda && gemm < 10; ++gemm) {  // some 10 ms on an H200
      REQUIRE_MESSAGE(rill_gemm(g_cuda, ta.t, tw.t, nullptr, 1.0f, 0.0f, busy.t) == RILL_OK, rill_last_error());
    }
    std::vector<std::unique_ptr<Tensor>> tensors;
    for (int call = 0; call < kCalls; ++call) {
      tensors.push_back(std::make_unique<Tensor>(contexts[i], RILL_DTYPE_F32, shape, x));
      const int32_t positions[3] = {call, 7 * call + 1, 1000 + call};
      REQUIRE_MESSAGE(rill_rope(contexts[i], tensors.back()->t, positions, 3, 10000.0f, 64) == RILL_OK,
                      rill_last_error());
    }
    for (const auto& t : tensors) results[i].push_back(t->read());
  }
  for (int call = 0; call < kCalls; ++call) {
    INFO("call " << call);
    check_close(results[0][static_cast<size_t>(call)], results[1][static_cast<size_t>(call)], RILL_DTYPE_F32);
  }
}

TEST_CASE("a tensor destroyed while an op that reads it is queued leaves that op's result intact") {
  // Device memory is released in stream order (after the queued GEMM) where
  // the device has memory pools, else after waiting for the stream; the
  // GEMM's operands are destroyed before its result is read back.
  const std::vector<int64_t> a_shape = {64, 2048}, w_shape = {2048, 2048}, out_shape = {64, 2048};
  const std::vector<float> a = random_values(numel(a_shape), 46), w = random_values(numel(w_shape), 47);
  std::vector<float> results[2];
  rill_context* contexts[2] = {g_cuda, g_cpu};
  for (int i = 0; i < 2; ++i) {
    Tensor out(contexts[i], RILL_DTYPE_F32, out_shape, std::vector<float>(numel(out_shape), 0.0f));
    {
      Tensor ta(contexts[i], RILL_DTYPE_F32, a_shape, a), tw(contexts[i], RILL_DTYPE_F32, w_shape, w);
      REQUIRE_MESSAGE(rill_gemm(contexts[i], ta.t, tw.t, nullptr, 1.0f, 0.0f, out.t) == RILL_OK, rill_last_error());
    }
    // New tensors may take the released memory at once; writing them must
    // not reach the GEMM's inputs.
    Tensor reuse(contexts[i], RILL_DTYPE_F32, w_shape, std::vector<float>(numel(w_shape), 1e6f));
    results[i] = out.read();
  }
  check_close(results[0], results[1], RILL_DTYPE_F32);
}

TEST_CASE("a write from pinned host memory has consumed it when it returns") {
  // From page-locked memory cudaMemcpyAsync returns before the copy ends;
  // rill_tensor_write promises that src may be reused at once.
  const size_t count = size_t{16} << 20;  // 64 MiB of f32
  float* pinned = nullptr;
  REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&pinned), count * sizeof(float)) == cudaSuccess);
  for (size_t i = 0; i < count; ++i) pinned[i] = static_cast<float>(i % 1000);
  const int64_t shape[1] = {static_cast<int64_t>(count)};
  rill_tensor* t = nullptr;
  REQUIRE_MESSAGE(rill_tensor_create(g_cuda, RILL_DTYPE_F32, 1, shape, &t) == RILL_OK, rill_last_error());
  REQUIRE_MESSAGE(rill_tensor_write(t, pinned, count * sizeof(float)) == RILL_OK, rill_last_error());
  std::fill(pinned, pinned + count, -1.0f);
  std::vector<float> back(count);
  REQUIRE_MESSAGE(rill_tensor_read(t, back.data(), count * sizeof(float)) == RILL_OK, rill_last_error());
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += back[i] != static_cast<float>(i % 1000);
  CHECK_MESSAGE(wrong == 0, wrong, " elements took the values written after rill_tensor_write returned");
  rill_tensor_destroy(t);
  (void)cudaFreeHost(pinned);
}

int main(int argc, char** argv) {
  const rill_status status = rill_context_create("[runtime]\nbackend = \"cuda\"\n", &g_cuda);
  if (status == RILL_ERROR_BACKEND_UNAVAILABLE) {
    std::printf("skipped: the CUDA backend is unavailable: %s\n", rill_last_error());
    return 77;
  }
  if (status != RILL_OK || rill_context_create("[runtime]\nbackend = \"cpu\"\n", &g_cpu) != RILL_OK) {
    std::printf("cannot create the contexts: %s\n", rill_last_error());
    return 1;
  }
  doctest::Context context(argc, argv);
  const int result = context.run();
  rill_context_destroy(g_cpu);
  rill_context_destroy(g_cuda);
  return result;
}
