// CUDA-specific paths the cross-backend conformance suite does not reach:
// the launch shapes for many rows, rows too long to park in shared memory,
// decode attention split over long KV caches, writes from pinned memory,
// device-memory exhaustion leaving the context usable, a GEMM with a bias on
// several leading dims, and the requests the CUDA backend reports as
// unsupported. Results are compared with the CPU backend's (which the
// conformance suite checks against a double reference) with the limits of
// tests/support/tolerance.h.
// Without a usable CUDA device the test reports skipped (77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "rill.h"
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
      const int32_t lengths[2] = {static_cast<int32_t>(slots), 1111};
      const rill_attention_params params{sizeof(rill_attention_params), 0.1f, c.window, c.softcap};
      std::vector<float> results[2];
      rill_context* contexts[2] = {g_cuda, g_cpu};
      for (int i = 0; i < 2; ++i) {
        Tensor tq(contexts[i], RILL_DTYPE_F32, q_shape, q), tk(contexts[i], RILL_DTYPE_F32, kv_shape, k);
        Tensor tv(contexts[i], RILL_DTYPE_F32, kv_shape, v), out(contexts[i], RILL_DTYPE_F32, q_shape, q);
        REQUIRE_MESSAGE(rill_attention_ex(contexts[i], tq.t, tk.t, tv.t, lengths, 2, &params, out.t) == RILL_OK,
                        rill_last_error());
        results[i] = out.read();
      }
      check_close(results[0], results[1], RILL_DTYPE_F32);
    }
  }
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
