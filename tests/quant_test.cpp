// Quantized weights through the C API: the block dtypes' sizes and shape rules,
// every activation operand refusing them, rill_gemm on block weights against
// the double-precision reference on the dequantized weights (tolerance.h's
// per-format limits, and a negative control), the portable, AVX2 and
// AVX-512 VNNI kernels and any thread count giving the same bits (and a tile
// its row dots' bits), and rill_get_rows from block tables. Bit-exactness of
// the formats against GGUF's reference is checked by
// tests/torch/quant_reference.py (PyPI's gguf).
// Runs on the backend named by RILL_TEST_BACKEND (default "cpu"; a backend
// that cannot be had is reported as skipped, exit code 77); the "cpu: ..."
// cases check the CPU backend's own promises and run only there.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "reference.h"
#include "rill.h"
#include "test_helpers.h"
#include "tolerance.h"

namespace {

using rill_test::expect_failure;
using rill_test::ScopedContext;

// The context config of the backend under test (main sets it).
std::string g_config;
// Whether that backend quantizes activations to 8 bits for block weights (rill.h's rill_gemm).
bool g_quantizes_activations = false;

const rill_dtype kBlockDtypes[] = {RILL_DTYPE_Q8_0, RILL_DTYPE_Q4_0, RILL_DTYPE_Q4_K, RILL_DTYPE_Q5_K,
                                   RILL_DTYPE_Q6_K, RILL_DTYPE_Q5_0, RILL_DTYPE_Q5_1};

std::vector<float> normal(size_t count, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(count);
  for (float& x : v) x = dist(gen);
  return v;
}

std::vector<float> read_f32(const rill_tensor* t) {
  std::vector<float> v(rill_tensor_numel(t));
  REQUIRE_MESSAGE(rill_tensor_read_f32(t, v.data(), v.size()) == RILL_OK, rill_last_error());
  return v;
}

std::vector<unsigned char> read_raw(const rill_tensor* t) {
  std::vector<unsigned char> v(rill_tensor_nbytes(t));
  REQUIRE_MESSAGE(rill_tensor_read(t, v.data(), v.size()) == RILL_OK, rill_last_error());
  return v;
}

// A [n, k] weight tensor of dtype quantized from N(0, 1) values.
rill_tensor* quantized_weights(ScopedContext& c, rill_dtype dtype, int64_t n, int64_t k, uint32_t seed) {
  rill_tensor* w = c.tensor({n, k}, dtype);
  const std::vector<float> values = normal(static_cast<size_t>(n * k), seed);
  REQUIRE_MESSAGE(rill_tensor_write_f32(w, values.data(), values.size()) == RILL_OK, rill_last_error());
  return w;
}

// out = a · w^T + bias on ctx, read back as floats.
std::vector<float> run_gemm(ScopedContext& c, rill_tensor* w, const std::vector<float>& a,
                            const std::vector<float>& bias, int64_t rows, int64_t n, int64_t k,
                            rill_dtype act = RILL_DTYPE_F32) {
  rill_tensor* ta = c.tensor({rows, k}, act);
  rill_tensor* tb = bias.empty() ? nullptr : c.tensor({n}, act);
  rill_tensor* out = c.tensor({rows, n}, act);
  REQUIRE(rill_tensor_write_f32(ta, a.data(), a.size()) == RILL_OK);
  if (tb) REQUIRE(rill_tensor_write_f32(tb, bias.data(), bias.size()) == RILL_OK);
  REQUIRE_MESSAGE(rill_gemm(c.ctx, ta, w, tb, 1.0f, 0.0f, out) == RILL_OK, rill_last_error());
  std::vector<float> result = read_f32(out);
  rill_tensor_destroy(ta);
  rill_tensor_destroy(tb);
  rill_tensor_destroy(out);
  return result;
}

}  // namespace

TEST_CASE("block dtypes: names, block sizes, and the shape rule") {
  const size_t elements[] = {32, 32, 256, 256, 256, 32, 32}, bytes[] = {34, 18, 144, 176, 210, 22, 24};
  const char* names[] = {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "q5_0", "q5_1"};
  for (size_t i = 0; i < std::size(kBlockDtypes); ++i) {
    CHECK(rill_dtype_block_elements(kBlockDtypes[i]) == elements[i]);
    CHECK(rill_dtype_block_bytes(kBlockDtypes[i]) == bytes[i]);
    CHECK(rill_dtype_size(kBlockDtypes[i]) == 0);
    CHECK(std::string(rill_dtype_name(kBlockDtypes[i])) == names[i]);
  }
  CHECK(rill_dtype_block_elements(RILL_DTYPE_BF16) == 1);
  CHECK(rill_dtype_block_bytes(RILL_DTYPE_F32) == 4);
  CHECK(rill_dtype_block_elements(static_cast<rill_dtype>(10)) == 0);
  CHECK(rill_dtype_block_bytes(RILL_DTYPE_MAX_ENUM) == 0);

  ScopedContext c(g_config);
  rill_tensor* t = c.tensor({3, 512}, RILL_DTYPE_Q4_K);
  CHECK(rill_tensor_numel(t) == 3 * 512);
  CHECK(rill_tensor_nbytes(t) == 3 * 2 * 144);
  rill_tensor_destroy(t);
  rill_tensor* out = nullptr;
  const int64_t odd[] = {3, 896}, three[] = {2, 3, 256};
  expect_failure(rill_tensor_create(c.ctx, RILL_DTYPE_Q4_K, 2, odd, &out), RILL_ERROR_SHAPE,
                 {"shape[1]", "multiple of 256", "896"});
  expect_failure(rill_tensor_create(c.ctx, RILL_DTYPE_Q8_0, 3, three, &out), RILL_ERROR_SHAPE,
                 {"q8_0", "2-dim", "3 dims"});
  CHECK(out == nullptr);
  CHECK(rill_tensor_create(c.ctx, RILL_DTYPE_Q8_0, 2, odd, &out) == RILL_OK);  // 896 = 28 blocks of 32
  rill_tensor_destroy(out);
}

TEST_CASE("block dtypes: every activation operand refuses them, naming the argument") {
  ScopedContext c(g_config);
  rill_tensor* q = c.tensor({4, 256}, RILL_DTYPE_Q8_0);
  rill_tensor* x = c.tensor({4, 256});
  rill_tensor* w = c.tensor({8, 256}, RILL_DTYPE_Q4_K);
  rill_tensor* out = c.tensor({4, 8});
  expect_failure(rill_rms_norm(c.ctx, q, nullptr, 1e-5f, x), RILL_ERROR_DTYPE, {"rill_rms_norm", "x:", "q8_0"});
  expect_failure(rill_residual_add(c.ctx, x, q, nullptr, 1, 1), RILL_ERROR_DTYPE, {"update:", "q8_0"});
  expect_failure(rill_gemm(c.ctx, q, w, nullptr, 1, 0, out), RILL_ERROR_DTYPE, {"rill_gemm", "a:", "q8_0"});
  expect_failure(rill_gemm(c.ctx, x, w, nullptr, 1, 0, q), RILL_ERROR_DTYPE, {"out:", "q8_0"});
  rill_tensor* w_bad_k = c.tensor({8, 512}, RILL_DTYPE_Q4_K);
  expect_failure(rill_gemm(c.ctx, x, w_bad_k, nullptr, 1, 0, out), RILL_ERROR_SHAPE, {"w:", "[N, 256]"});
  rill_tensor* rows = c.tensor({2, 256});
  const int32_t ids[] = {1, 8};
  expect_failure(rill_get_rows(c.ctx, w, ids, 2, rows), RILL_ERROR_INVALID_ARGUMENT, {"ids[1]", "0 to V - 1 = 7", "8"});
  expect_failure(rill_get_rows(c.ctx, w, ids, 2, q), RILL_ERROR_DTYPE, {"out:", "q8_0"});
  for (rill_tensor* t : {q, x, w, out, w_bad_k, rows}) rill_tensor_destroy(t);
}

TEST_CASE("rill_gemm on block weights: against the double reference on the dequantized weights") {
  ScopedContext c(g_config);
  // M = 1 (decode), a few rows, and prefill-sized batches (71 rows: more
  // prefill tiles than one call of the CPU's tile kernels takes); K of 1, 2
  // and 3 super-blocks.
  const int64_t shapes[][3] = {{1, 24, 512}, {3, 40, 768}, {17, 16, 256}, {71, 16, 512}};
  for (rill_dtype dtype : kBlockDtypes) {
    for (const auto& shape : shapes) {
      const int64_t rows = shape[0], n = shape[1], k = shape[2];
      CAPTURE(std::string(rill_dtype_name(dtype)));
      CAPTURE(rows);
      rill_tensor* w = quantized_weights(c, dtype, n, k, 7);
      const std::vector<float> a = normal(static_cast<size_t>(rows * k), 11);
      const std::vector<float> bias = normal(static_cast<size_t>(n), 13);
      const std::vector<float> got = run_gemm(c, w, a, bias, rows, n, k);
      const std::vector<float> dequantized = read_f32(w);
      const std::vector<double> expected = rill_ref::gemm(a, dequantized, bias, 1.0f, 0.0f, {}, rows, n, k);
      const rill_tol::Score s = rill_tol::score(got, expected);
      rill_tol::note(s, dtype);
      CHECK_MESSAGE(rill_tol::within(s, dtype), rill_tol::describe(s, dtype));
      // Negative control: against the weights with the first two runs of 32
      // of every row swapped (as a nibble-order mistake would read them), the
      // same limits must fail.
      std::vector<float> off = dequantized;
      for (int64_t r = 0; r < n; ++r) {
        const auto row = static_cast<size_t>(r * k);
        for (size_t i = 0; i < 32; ++i) std::swap(off[row + i], off[row + 32 + i]);
      }
      const rill_tol::Score control = rill_tol::score(got, rill_ref::gemm(a, off, bias, 1.0f, 0.0f, {}, rows, n, k));
      CHECK_MESSAGE(!rill_tol::within(control, dtype), "the limits miss a shifted weight block: ",
                    rill_tol::describe(control, dtype));
      rill_tensor_destroy(w);
    }
  }
  MESSAGE(rill_tol::largest_noted());
}

TEST_CASE("rill_gemm on block weights: f16 and bf16 activations") {
  ScopedContext c(g_config);
  const int64_t rows = 2, n = 8, k = 256;
  rill_tensor* w = quantized_weights(c, RILL_DTYPE_Q4_K, n, k, 3);
  const std::vector<float> a = normal(static_cast<size_t>(rows * k), 5);
  const std::vector<double> expected = rill_ref::gemm(a, read_f32(w), {}, 1.0f, 0.0f, {}, rows, n, k);
  for (rill_dtype act : {RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    CAPTURE(std::string(rill_dtype_name(act)));
    const rill_tol::Score s = rill_tol::score(run_gemm(c, w, a, {}, rows, n, k, act), expected);
    // The output's own rounding to 16 bits is the larger error here.
    CHECK_MESSAGE(s.nmse <= rill_tol::limits(act).nmse + rill_tol::limits(RILL_DTYPE_Q4_K).nmse,
                  rill_tol::describe(s, act));
  }
  rill_tensor_destroy(w);
}

TEST_CASE("cpu: rill_gemm on block weights: the same bits for any thread count") {
  // In the ISA this process runs (CTest runs the test again with
  // RILL_CPU_ISA=scalar and avx2). The AVX2 and AVX-512 VNNI kernels compute
  // tiles of 1 x 8 and 4 x 2 outputs: 5 rows and 67 columns leave a partial
  // tile on both edges, and K = 896 and 4864 are Qwen2-0.5B's (Q8_0 and Q4_0
  // only for 896, which is not whole 256-element blocks).
  const int64_t n = 67;
  for (const int64_t k : {int64_t{896}, int64_t{4864}}) {
    for (const int64_t rows : {int64_t{1}, int64_t{5}}) {
      std::vector<float> a = normal(static_cast<size_t>(rows * k), 21);
      // Row 0 tests the edges of the activations' quantization: one block of
      // subnormal values (whose 1 / d overflows: the zero among them meets
      // 0 * inf), then zeros.
      for (size_t i = 0; i < 32; ++i) a[i] *= 1e-40f;
      a[5] = 0.0f;
      std::fill(a.begin() + 32, a.begin() + k, 0.0f);
      for (rill_dtype dtype : kBlockDtypes) {
        if (k % static_cast<int64_t>(rill_dtype_block_elements(dtype)) != 0) continue;
        CAPTURE(std::string(rill_dtype_name(dtype)));
        CAPTURE(k);
        CAPTURE(rows);
        std::vector<std::vector<float>> results;
        for (const char* threads : {"1", "3", "8"}) {
          ScopedContext c(std::string("[runtime]\nbackend = \"cpu\"\n[backend.cpu]\nthreads = ") + threads + "\n");
          rill_tensor* w = quantized_weights(c, dtype, n, k, 23);
          results.push_back(run_gemm(c, w, a, {}, rows, n, k));
          rill_tensor_destroy(w);
        }
        for (const std::vector<float>& r : results) {
          CHECK(std::memcmp(r.data(), results[0].data(), r.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("cpu: rill_gemm on block weights: a tile's outputs are bitwise its row dots'") {
  // The CPU's AVX2 and VNNI kernels compute whole groups of eight weight rows
  // in tiles (1 x 8 for a decode row, 4 x 2 for prefill rows) and the short
  // last group with one row dot per output (the portable kernel's only
  // path). With weight rows 64 .. 66 copies of rows 0 .. 2, those columns
  // come from the row dots and must equal the tiles' columns 0 .. 2 bit for
  // bit. Rows: 1 (a decode tile), 5 (a prefill tile and a decode tile), 71
  // (17 prefill tiles, more than one call of the tile kernel takes, and three
  // decode tiles).
  const int64_t n = 67, k = 4864, copied = 3;
  std::vector<float> values = normal(static_cast<size_t>(n * k), 31);
  std::copy(values.begin(), values.begin() + copied * k, values.begin() + (n - copied) * k);
  for (const int64_t rows : {int64_t{1}, int64_t{5}, int64_t{71}}) {
    const std::vector<float> a = normal(static_cast<size_t>(rows * k), 37);
    for (rill_dtype dtype : kBlockDtypes) {
      if (k % static_cast<int64_t>(rill_dtype_block_elements(dtype)) != 0) continue;
      CAPTURE(std::string(rill_dtype_name(dtype)));
      CAPTURE(rows);
      ScopedContext c;
      rill_tensor* w = c.tensor({n, k}, dtype);
      REQUIRE_MESSAGE(rill_tensor_write_f32(w, values.data(), values.size()) == RILL_OK, rill_last_error());
      const std::vector<float> out = run_gemm(c, w, a, {}, rows, n, k);
      for (int64_t r = 0; r < rows; ++r) {
        CHECK(std::memcmp(&out[static_cast<size_t>(r * n)], &out[static_cast<size_t>(r * n + n - copied)],
                          copied * sizeof(float)) == 0);
      }
      rill_tensor_destroy(w);
    }
  }
}

TEST_CASE("rill_get_rows: rows of block tables, dequantized, and of element tables, copied") {
  ScopedContext c(g_config);
  const int64_t vocab = 6, d = 512;
  const int32_t ids[] = {5, 0, 5, 2};
  for (rill_dtype dtype : kBlockDtypes) {
    CAPTURE(std::string(rill_dtype_name(dtype)));
    rill_tensor* table = quantized_weights(c, dtype, vocab, d, 31);
    const std::vector<float> all = read_f32(table);
    for (rill_dtype out_dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
      rill_tensor* out = c.tensor({4, d}, out_dtype);
      REQUIRE_MESSAGE(rill_get_rows(c.ctx, table, ids, 4, out) == RILL_OK, rill_last_error());
      const std::vector<float> got = read_f32(out);
      for (size_t i = 0; i < 4; ++i) {
        for (int64_t j = 0; j < d; ++j) {
          const double want = rill_ref::round_to_dtype(all[static_cast<size_t>(ids[i] * d + j)], out_dtype);
          if (got[i * static_cast<size_t>(d) + static_cast<size_t>(j)] != static_cast<float>(want)) {
            FAIL_CHECK("row ", i, " element ", j, ": got ", got[i * static_cast<size_t>(d) + static_cast<size_t>(j)],
                       ", expected ", want);
            break;
          }
        }
      }
      rill_tensor_destroy(out);
    }
    rill_tensor_destroy(table);
  }
  rill_tensor* table = c.tensor({vocab, 4});
  const std::vector<float> values = normal(static_cast<size_t>(vocab * 4), 3);
  REQUIRE(rill_tensor_write_f32(table, values.data(), values.size()) == RILL_OK);
  rill_tensor* out = c.tensor({4, 4});
  REQUIRE_MESSAGE(rill_get_rows(c.ctx, table, ids, 4, out) == RILL_OK, rill_last_error());
  const std::vector<float> got = read_f32(out);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(std::memcmp(&got[4 * i], &values[static_cast<size_t>(ids[i]) * 4], 4 * sizeof(float)) == 0);
  }
  rill_tensor_destroy(out);
  rill_tensor_destroy(table);
}

// What rill.h promises for a non-finite activation: a backend that quantizes
// the activations (the CPU) gives NaN for every output the block feeds, as an
// infinity or a NaN has no 8-bit level; one that dots in float gives IEEE's
// value of the dot on the dequantized weights (+-inf by the weight's sign,
// NaN from a NaN).
static bool documented_non_finite(float got, double float_dot) {
  if (g_quantizes_activations || std::isnan(float_dot)) return std::isnan(got);
  return static_cast<double>(got) == float_dot;
}

TEST_CASE("block dtypes: non-finite or huge values are refused, non-finite activations give NaN or IEEE's value") {
  ScopedContext c(g_config);
  rill_tensor* w = c.tensor({2, 256}, RILL_DTYPE_Q4_K);
  std::vector<float> values(512, 0.5f);
  values[300] = std::numeric_limits<float>::quiet_NaN();
  expect_failure(rill_tensor_write_f32(w, values.data(), values.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"src[300]", "q4_k", "finite"});
  values[300] = 3e5f;
  expect_failure(rill_tensor_write_f32(w, values.data(), values.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"src[300]", "262144"});
  values[300] = 0.25f;
  values[256 + 7] = -0.5f;  // output 1 meets the infinity below through a negative weight
  REQUIRE(rill_tensor_write_f32(w, values.data(), values.size()) == RILL_OK);
  const std::vector<float> dequantized = read_f32(w);
  // Row 0 holds an infinity, row 1 a NaN.
  std::vector<float> a(512, 1.0f);
  a[7] = std::numeric_limits<float>::infinity();
  a[256 + 40] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> out = run_gemm(c, w, a, {}, 2, 2, 256);
  for (size_t row = 0; row < 2; ++row) {
    for (size_t n = 0; n < 2; ++n) {
      double float_dot = 0.0;
      for (size_t k = 0; k < 256; ++k) float_dot += static_cast<double>(a[row * 256 + k]) * dequantized[n * 256 + k];
      CAPTURE(row);
      CAPTURE(n);
      CAPTURE(float_dot);
      CHECK_MESSAGE(documented_non_finite(out[row * 2 + n], float_dot), "got ", out[row * 2 + n]);
    }
  }
  rill_tensor_destroy(w);
}

TEST_CASE("quantize then dequantize: within the format's error, and stable") {
  ScopedContext c(g_config);
  const int64_t n = 16, k = 1024;
  const std::vector<float> x = normal(static_cast<size_t>(n * k), 41);
  for (rill_dtype dtype : kBlockDtypes) {
    CAPTURE(std::string(rill_dtype_name(dtype)));
    rill_tensor* t = c.tensor({n, k}, dtype);
    REQUIRE(rill_tensor_write_f32(t, x.data(), x.size()) == RILL_OK);
    const std::vector<unsigned char> q = read_raw(t);
    const std::vector<float> y = read_f32(t);
    REQUIRE(rill_tensor_write_f32(t, y.data(), y.size()) == RILL_OK);
    CHECK(read_raw(t) == q);
    rill_tensor_destroy(t);
  }
}

int main(int argc, char** argv) {
  const char* env = std::getenv("RILL_TEST_BACKEND");
  const std::string backend = env && *env ? env : "cpu";
  g_config = "[runtime]\nbackend = \"" + backend + "\"\n";
  g_quantizes_activations = backend == "cpu";
  rill_context* probe = nullptr;
  const rill_status status = rill_context_create(g_config.c_str(), &probe);
  if (status == RILL_ERROR_BACKEND_UNAVAILABLE) {
    std::printf("SKIPPED: %s: %s\n", backend.c_str(), rill_last_error());
    return 77;
  }
  if (status != RILL_OK) {
    std::fprintf(stderr, "quant: cannot create a %s context: %s\n", backend.c_str(), rill_last_error());
    return 1;
  }
  rill_context_destroy(probe);
  doctest::Context context(argc, argv);
  if (backend != "cpu") context.addFilter("test-case-exclude", "cpu: *");
  return context.run();
}
