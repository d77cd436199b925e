// Tests of the Vulkan plugin through the backend interface (rill_backend.h),
// loaded with dlopen like the runtime does: op results against a double
// reference for every dtype and both reduction paths, barrier correctness,
// command-buffer rollover, device selection and error mapping.
//
// Exits 77 (skipped) when the plugin cannot be loaded or no Vulkan device is
// present. With RILL_VULKAN_VALIDATION=1 the plugin enables the Khronos
// validation layer and turns any message into an op failure; this program
// then also fails if any validation message was logged.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu_convert.h"
#include "direct_plugin.h"
#include "quant.h"
#include "reference.h"
#include "rill_backend.h"
#include "tolerance.h"

#include <unistd.h>
#include <vulkan/vulkan.h>

namespace {

const rill_backend* g_backend = nullptr;
std::string g_last_error;
std::vector<std::string> g_validation_logs;
int g_memory_blocks_made = 0;  // "new memory block" debug messages: device memory allocations
int g_devices_made = 0;        // "new VkDevice" debug messages
std::string g_pipeline_cache_log;  // the last "pipeline cache ..." message
rill_log_level g_pipeline_cache_level = RILL_LOG_DEBUG;  // and its level

void host_log(rill_log_level level, const char*, const char* message) {
  if (std::strncmp(message, "validation:", 11) == 0) g_validation_logs.emplace_back(message);
  if (std::strncmp(message, "new memory block", 16) == 0) ++g_memory_blocks_made;
  if (std::strncmp(message, "new VkDevice", 12) == 0) ++g_devices_made;
  if (std::strncmp(message, "pipeline cache", 14) == 0) {
    g_pipeline_cache_log = message;
    g_pipeline_cache_level = level;
  }
}

rill_status host_fail(rill_status status, const char* message) {
  g_last_error = message;
  return status;
}

const rill_host_services g_host = {2u, sizeof(rill_host_services), host_log, host_fail};

const rill_backend_ops& ops() { return *g_backend->ops; }

size_t dtype_bytes(rill_dtype dtype) { return dtype == RILL_DTYPE_F32 ? 4 : 2; }

const char* dtype_name(rill_dtype dtype) {
  return dtype == RILL_DTYPE_F32 ? "f32" : dtype == RILL_DTYPE_F16 ? "f16" : "bf16";
}

std::vector<unsigned char> encode(const std::vector<float>& values, rill_dtype dtype) {
  std::vector<unsigned char> bytes(values.size() * dtype_bytes(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == RILL_DTYPE_F32) {
      std::memcpy(&bytes[i * 4], &values[i], 4);
    } else {
      uint16_t h = dtype == RILL_DTYPE_F16 ? rill::cpu::f32_to_f16(values[i]) : rill::cpu::f32_to_bf16(values[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
  return bytes;
}

std::vector<float> decode(const std::vector<unsigned char>& bytes, rill_dtype dtype) {
  std::vector<float> values(bytes.size() / dtype_bytes(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == RILL_DTYPE_F32) {
      std::memcpy(&values[i], &bytes[i * 4], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &bytes[i * 2], 2);
      values[i] = dtype == RILL_DTYPE_F16 ? rill::cpu::f16_to_f32(h) : rill::cpu::bf16_to_f32(h);
    }
  }
  return values;
}

// The value a float takes once stored in dtype.
std::vector<float> round_to(const std::vector<float>& values, rill_dtype dtype) {
  return decode(encode(values, dtype), dtype);
}

std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The result against the reference, with the limits of the tolerance module.
void check_close(const std::vector<float>& got, const std::vector<double>& want, rill_dtype dtype) {
  const rill_tol::Score score = rill_tol::score(got, want);
  CHECK_MESSAGE(rill_tol::within(score, dtype), rill_tol::describe(score, dtype));
}

// RMSNorm or LayerNorm (with bias b) of rows x cols values; w, b empty: none.
std::vector<double> norm_reference(const std::vector<float>& x, const std::vector<float>& w,
                                   const std::vector<float>& b, float eps, bool layer, int64_t rows, int64_t cols) {
  return layer ? rill_ref::layer_norm(rill_ref::to_double(x), w, b, eps, rows, cols)
               : rill_ref::rms_norm(rill_ref::to_double(x), w, eps, rows, cols);
}

// A context plus buffers that are freed with it.
struct Context {
  rill_backend_context* ctx = nullptr;
  std::vector<rill_backend_buffer*> buffers;

  explicit Context(const char* reduction_env = nullptr) {
    if (reduction_env != nullptr) setenv("RILL_VULKAN_NO_SUBGROUP", reduction_env, 1);
    rill_backend_context_options options{};
    options.struct_size = sizeof options;
    options.device_index = 0;
    rill_status status = g_backend->context_create(&options, &ctx);
    unsetenv("RILL_VULKAN_NO_SUBGROUP");
    REQUIRE_MESSAGE(status == RILL_OK, g_last_error);
  }
  ~Context() {
    for (rill_backend_buffer* b : buffers) g_backend->buffer_free(ctx, b);
    g_backend->context_destroy(ctx);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  rill_backend_buffer* alloc(uint64_t bytes) {
    rill_backend_buffer* buffer = nullptr;
    REQUIRE_MESSAGE(g_backend->buffer_alloc(ctx, bytes, &buffer) == RILL_OK, g_last_error);
    buffers.push_back(buffer);
    return buffer;
  }

  // A 2-dim tensor [rows, cols] (1-dim [cols] for rows 0) that starts
  // offset_elements into a fresh buffer with spare room after it, holding values.
  rill_backend_tensor tensor(const std::vector<float>& values, rill_dtype dtype, int64_t rows, int64_t cols,
                             uint64_t offset_elements = 0) {
    rill_backend_tensor t{};
    t.offset = offset_elements * dtype_bytes(dtype);
    t.buffer = alloc(t.offset + values.size() * dtype_bytes(dtype) + 64);
    t.dtype = dtype;
    t.ndim = rows > 0 ? 2 : 1;
    t.shape[0] = rows > 0 ? rows : cols;
    t.shape[1] = rows > 0 ? cols : 1;
    t.shape[2] = t.shape[3] = 1;
    write(t, values);
    return t;
  }

  void write(const rill_backend_tensor& t, const std::vector<float>& values) {
    std::vector<unsigned char> bytes = encode(values, t.dtype);
    REQUIRE_MESSAGE(g_backend->buffer_write(ctx, t.buffer, t.offset, bytes.data(), bytes.size()) == RILL_OK,
                    g_last_error);
  }

  std::vector<float> read(const rill_backend_tensor& t) {
    size_t n = static_cast<size_t>(t.shape[0] * t.shape[1] * t.shape[2] * t.shape[3]);
    std::vector<unsigned char> bytes(n * dtype_bytes(t.dtype));
    REQUIRE_MESSAGE(g_backend->buffer_read(ctx, t.buffer, t.offset, bytes.data(), bytes.size()) == RILL_OK,
                    g_last_error);
    return decode(bytes, t.dtype);
  }
};

const rill_dtype kDtypes[] = {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16};
// nullptr: the device's default (subgroups where available); "1": shared memory.
const char* const kReductions[] = {nullptr, "1"};

// Runs body(context, dtype) for every dtype on a fresh context per reduction
// path, both named in the failure messages.
template <typename Body>
void for_each_reduction_and_dtype(Body body) {
  for (const char* reduction : kReductions) {
    const std::string path = reduction ? "shared memory" : "default";
    CAPTURE(path);
    Context c(reduction);
    for (rill_dtype dtype : kDtypes) {
      const std::string dtype_label = dtype_name(dtype);
      CAPTURE(dtype_label);
      body(c, dtype);
    }
  }
}

}  // namespace

TEST_CASE("describe_device fills every field and rejects an index out of range") {
  uint32_t count = 0;
  REQUIRE(g_backend->device_count(&count) == RILL_OK);
  for (uint32_t i = 0; i < count; ++i) {
    rill_backend_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE(g_backend->describe_device(i, &info) == RILL_OK);
    CHECK(std::strlen(info.name) > 0);
    CHECK(info.memory_bytes > 0);
    CHECK(std::strstr(info.details, "16-bit storage") != nullptr);
    CHECK(std::strstr(info.details, "cooperative matrix") != nullptr);
    if (std::strstr(info.name, "llvmpipe") != nullptr) CHECK(info.type == RILL_DEVICE_TYPE_CPU_IMPLEMENTATION);
  }
  rill_backend_device_info info{};
  info.struct_size = sizeof info;
  CHECK(g_backend->describe_device(count, &info) == RILL_ERROR_INVALID_ARGUMENT);
  CHECK(g_last_error.find("out of range") != std::string::npos);
}

// The runtime matches names (config_test); the plugin opens the index it is given.
TEST_CASE("a device is opened by index, and an index out of range is refused") {
  uint32_t count = 0;
  REQUIRE(g_backend->device_count(&count) == RILL_OK);
  rill_backend_context_options options{};
  options.struct_size = sizeof options;
  rill_backend_context* ctx = nullptr;

  options.device_index = static_cast<int32_t>(count) - 1;
  REQUIRE_MESSAGE(g_backend->context_create(&options, &ctx) == RILL_OK, g_last_error);
  g_backend->context_destroy(ctx);
  ctx = nullptr;

  for (int32_t index : {static_cast<int32_t>(count), -1}) {
    options.device_index = index;
    CHECK(g_backend->context_create(&options, &ctx) == RILL_ERROR_BACKEND_UNAVAILABLE);
    CHECK(g_last_error.find("device index: expected 0 to " + std::to_string(count - 1) + ", got " +
                            std::to_string(index)) != std::string::npos);
    CHECK(ctx == nullptr);
  }
}

TEST_CASE("residual_add matches the reference for every dtype, with and without gain, at offsets") {
  for (rill_dtype dtype : kDtypes) {
    const std::string dtype_label = dtype_name(dtype);
    CAPTURE(dtype_label);
    Context c;
    const int64_t rows = 7, cols = 333;
    for (bool with_gain : {false, true}) {
      auto res = round_to(random_values(rows * cols, 1), dtype);
      auto upd = round_to(random_values(rows * cols, 2), dtype);
      auto gain = round_to(random_values(cols, 3, 0.5f, 1.5f), dtype);
      rill_backend_tensor tr = c.tensor(res, dtype, rows, cols, 6);
      rill_backend_tensor tu = c.tensor(upd, dtype, rows, cols, 258);
      rill_backend_tensor tg = c.tensor(gain, dtype, 0, cols, 2);
      REQUIRE(ops().residual_add(c.ctx, &tr, &tu, with_gain ? &tg : nullptr, 0.75f, -1.25f) == RILL_OK);
      check_close(c.read(tr),
                  rill_ref::residual_add(res, upd, with_gain ? gain : std::vector<float>(), 0.75f, -1.25f, rows, cols),
                  dtype);
    }
  }
}

TEST_CASE("rms_norm and layer_norm match the reference for any D, both reduction paths") {
  for_each_reduction_and_dtype([&](Context& c, rill_dtype dtype) {
    // Row lengths below, at and far above one workgroup's reach, odd tails.
    for (int64_t cols : {1, 7, 256, 1000, 4099}) {
      CAPTURE(cols);
      const int64_t rows = 5;
      auto x = round_to(random_values(rows * cols, 10, -2.0f, 3.0f), dtype);
      auto w = round_to(random_values(cols, 11, 0.5f, 1.5f), dtype);
      auto b = round_to(random_values(cols, 12), dtype);
      for (bool layer : {false, true}) {
        CAPTURE(layer);
        rill_backend_tensor tx = c.tensor(x, dtype, rows, cols, 4);
        rill_backend_tensor tw = c.tensor(w, dtype, 0, cols);
        rill_backend_tensor tb = c.tensor(b, dtype, 0, cols);
        rill_backend_tensor tout = c.tensor(std::vector<float>(x.size(), 0.0f), dtype, rows, cols, 2);
        const float eps = 1e-5f;
        rill_status status = layer ? ops().layer_norm(c.ctx, &tx, &tw, &tb, eps, &tout)
                                   : ops().rms_norm(c.ctx, &tx, &tw, eps, &tout);
        REQUIRE_MESSAGE(status == RILL_OK, g_last_error);
        check_close(c.read(tout), norm_reference(x, w, b, eps, layer, rows, cols), dtype);
        // In place (out aliases x), without weight.
        status = layer ? ops().layer_norm(c.ctx, &tx, nullptr, nullptr, eps, &tx)
                       : ops().rms_norm(c.ctx, &tx, nullptr, eps, &tx);
        REQUIRE(status == RILL_OK);
        if (cols > 1 || !layer) check_close(c.read(tx), norm_reference(x, {}, {}, eps, layer, rows, cols), dtype);
      }
    }
  });
}

TEST_CASE("fused add+norm equals residual_add followed by the norm of the rounded residual") {
  for_each_reduction_and_dtype([&](Context& c, rill_dtype dtype) {
    for (int64_t cols : {3, 512, 2050}) {
      for (bool layer : {false, true}) {
        CAPTURE(cols);
        CAPTURE(layer);
        const int64_t rows = 4;
        auto x = round_to(random_values(rows * cols, 20), dtype);
        auto res = round_to(random_values(rows * cols, 21, -3.0f, 3.0f), dtype);
        auto gain = round_to(random_values(cols, 22, 0.5f, 1.5f), dtype);
        auto w = round_to(random_values(cols, 23, 0.5f, 1.5f), dtype);
        auto b = round_to(random_values(cols, 24), dtype);
        rill_backend_tensor tx = c.tensor(x, dtype, rows, cols, 8);
        rill_backend_tensor tr = c.tensor(res, dtype, rows, cols, 14);
        rill_backend_tensor tg = c.tensor(gain, dtype, 0, cols);
        rill_backend_tensor tw = c.tensor(w, dtype, 0, cols);
        rill_backend_tensor tb = c.tensor(b, dtype, 0, cols);
        const float eps = 1e-6f, rs = 0.5f, us = 2.0f;
        rill_status status = layer ? ops().fused_add_layer_norm(c.ctx, &tx, &tr, &tg, &tw, &tb, eps, rs, us)
                                   : ops().fused_add_rms_norm(c.ctx, &tx, &tr, &tg, &tw, eps, rs, us);
        REQUIRE_MESSAGE(status == RILL_OK, g_last_error);

        std::vector<double> want_residual;
        const std::vector<double> want_x =
            layer ? rill_ref::fused_add_layer_norm(x, res, gain, w, b, eps, rs, us, rows, cols, dtype, &want_residual)
                  : rill_ref::fused_add_rms_norm(x, res, gain, w, eps, rs, us, rows, cols, dtype, &want_residual);
        check_close(c.read(tr), want_residual, dtype);
        check_close(c.read(tx), want_x, dtype);
      }
    }
  });
}

// One gemm on the backend, checked against the double reference: random a,
// w and bias (seeds from seed on) at the given element offsets of their
// buffers (a, w, bias, out), bias and beta = -1.5 when accumulating; without,
// out starts as NaNs, which beta == 0 must never read.
struct GemmOffsets {
  uint64_t a, w, bias, out;
};
void check_gemm(Context& c, rill_dtype dtype, int64_t rows, int64_t n, int64_t k, bool accumulate,
                GemmOffsets offsets, uint32_t seed) {
  auto a = round_to(random_values(rows * k, seed), dtype);
  auto w = round_to(random_values(n * k, seed + 1), dtype);
  auto bias = round_to(random_values(n, seed + 2), dtype);
  std::vector<float> prior = accumulate ? round_to(random_values(rows * n, seed + 3), dtype)
                                        : std::vector<float>(rows * n, NAN);
  rill_backend_tensor ta = c.tensor(a, dtype, rows, k, offsets.a);
  rill_backend_tensor tw = c.tensor(w, dtype, n, k, offsets.w);
  rill_backend_tensor tb = c.tensor(bias, dtype, 0, n, offsets.bias);
  rill_backend_tensor tout = c.tensor(prior, dtype, rows, n, offsets.out);
  const float alpha = 0.5f, beta = accumulate ? -1.5f : 0.0f;
  REQUIRE_MESSAGE(ops().gemm(c.ctx, &ta, &tw, accumulate ? &tb : nullptr, alpha, beta, &tout) == RILL_OK,
                  g_last_error);
  const std::vector<double> want =
      rill_ref::gemm(a, w, accumulate ? bias : std::vector<float>(), alpha, beta, prior, rows, n, k);
  check_close(c.read(tout), want, dtype);
}

TEST_CASE("gemm matches the reference: decode and tiled paths, bias, alpha, beta, edges") {
  for_each_reduction_and_dtype([&](Context& c, rill_dtype dtype) {
    struct Shape {
      int64_t rows, n, k;
    };
    // The decode GEMV and the tiled GEMM read a and w as vectors of 4 when
    // every row starts on a multiple of 4 elements (the offsets of 4 and 8
    // below with K = 300, 64, 100, 1000; 2 and 6 do not, nor does K = 33).
    // The GEMV owns 4 output columns per workgroup (N = 37: one left over).
    // 40 x 70 x 1000 has two output tiles and splits K into 336, 336 and 328.
    for (Shape s : {Shape{1, 37, 300}, Shape{3, 37, 300}, Shape{8, 64, 64}, Shape{9, 70, 33}, Shape{130, 129, 100},
                    Shape{40, 70, 1000}}) {
      for (bool accumulate : {false, true}) {
        const bool vector_offsets = accumulate;
        CAPTURE(s.rows);
        CAPTURE(s.n);
        CAPTURE(s.k);
        CAPTURE(accumulate);
        CAPTURE(vector_offsets);
        const uint64_t a_offset = vector_offsets ? 4 : 2, w_offset = vector_offsets ? 8 : 6;
        check_gemm(c, dtype, s.rows, s.n, s.k, accumulate, {a_offset, w_offset, 0, 10}, 30);
      }
    }
  });
}

// Registered alone (ctest vulkan_coopmat_gemm: --no-skip with
// RILL_TEST_COOPMAT=1), which exits 77 where device 0 reports no
// cooperative-matrix shape the plugin uses; skipped in the plain runs.
TEST_CASE("coopmat: f16 gemm on the matrix units matches the reference across block edges" * doctest::skip()) {
  Context c;
  // Blocks of 4 x 4 matrix tiles (64 x 64 with 16 x 16 x 16), k in steps of
  // two tiles (32): shapes one block, just over one block and many, K short
  // of a step, past one and long, at offsets that are no multiple of 8.
  struct Shape {
    int64_t rows, n, k;
  };
  const rill_dtype dtype = RILL_DTYPE_F16;
  for (Shape s : {Shape{9, 70, 33}, Shape{64, 64, 32}, Shape{65, 129, 47}, Shape{130, 200, 1000}, Shape{300, 64, 16},
                  Shape{17, 33, 5}}) {
    for (bool accumulate : {false, true}) {
      CAPTURE(s.rows);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(accumulate);
      check_gemm(c, dtype, s.rows, s.n, s.k, accumulate, {3, 5, 1, 7}, 40);
    }
  }
}

TEST_CASE("block tables at any byte offset: get_rows bit for bit, gemm within the block limits") {
  // The shaders read weights as 32-bit words. A table may start at any byte
  // (rill_backend_tensor.offset), and rows of an odd number of Q8_0/Q4_0/Q5_0
  // blocks (34, 18 and 22 bytes) or of Q6_K super-blocks (210) start at 2 mod 4,
  // so every block field lands at every position in a word. The reference
  // is runtime/quant's decode of the same bytes (bit for bit gguf.quants',
  // tests/torch/quant_reference.py).
  Context c;
  const int32_t ids[] = {4, 0, 3, 1};
  const int64_t vocab = 5;
  for (rill_dtype dtype : {RILL_DTYPE_Q8_0, RILL_DTYPE_Q4_0, RILL_DTYPE_Q5_0, RILL_DTYPE_Q5_1, RILL_DTYPE_Q4_K,
                           RILL_DTYPE_Q5_K, RILL_DTYPE_Q6_K}) {
    const int64_t k = rill_backend_block_elements(dtype) == 32 ? 96 : 256;
    const size_t row_bytes = rill::quant::row_bytes(dtype, k);
    std::vector<unsigned char> blocks(vocab * row_bytes);
    std::vector<float> decoded(size_t(vocab * k));
    for (int64_t r = 0; r < vocab; ++r) {
      const std::vector<float> row = random_values(size_t(k), 40 + uint32_t(r));
      rill::quant::quantize_row(dtype, row.data(), &blocks[size_t(r) * row_bytes], k);
      rill::quant::dequantize_row(dtype, &blocks[size_t(r) * row_bytes], &decoded[size_t(r * k)], k);
    }
    for (uint64_t offset : {0, 1, 2, 3}) {
      const std::string table_label = rill_backend_dtype_name(dtype) + std::string(" at byte ") + std::to_string(offset);
      CAPTURE(table_label);
      rill_backend_tensor table{};
      table.buffer = c.alloc(offset + blocks.size() + 64);
      table.offset = offset;
      table.dtype = dtype;
      table.ndim = 2;
      table.shape[0] = vocab;
      table.shape[1] = k;
      table.shape[2] = table.shape[3] = 1;
      REQUIRE_MESSAGE(g_backend->buffer_write(c.ctx, table.buffer, offset, blocks.data(), blocks.size()) == RILL_OK,
                      g_last_error);
      rill_backend_tensor out = c.tensor(std::vector<float>(size_t(4 * k)), RILL_DTYPE_F32, 4, k);
      REQUIRE_MESSAGE(ops().get_rows(c.ctx, &table, ids, 4, &out) == RILL_OK, g_last_error);
      const std::vector<float> got = c.read(out);
      size_t mismatches = 0;
      for (size_t i = 0; i < 4; ++i) {
        mismatches += std::memcmp(&got[i * size_t(k)], &decoded[size_t(ids[i] * k)], size_t(k) * sizeof(float)) != 0;
      }
      CHECK_MESSAGE(mismatches == 0, mismatches, " of 4 rows differ from the decoded table");
      // Decode (one row streams the blocks) and prefill (9 rows: the table
      // decoded whole, then the element GEMM).
      for (int64_t rows : {1, 9}) {
        CAPTURE(rows);
        const std::vector<float> a = random_values(size_t(rows * k), 50);
        rill_backend_tensor ta = c.tensor(a, RILL_DTYPE_F32, rows, k);
        rill_backend_tensor tout = c.tensor(std::vector<float>(size_t(rows * vocab)), RILL_DTYPE_F32, rows, vocab);
        REQUIRE_MESSAGE(ops().gemm(c.ctx, &ta, &table, nullptr, 1.0f, 0.0f, &tout) == RILL_OK, g_last_error);
        const std::vector<double> want =
            rill_ref::gemm(a, decoded, {}, 1.0f, 0.0f, std::vector<float>(size_t(rows * vocab)), rows, vocab, k);
        const rill_tol::Score score = rill_tol::score(c.read(tout), want);
        const rill_tol::Limits limits = rill_tol::f32_activation_limits(dtype);
        CHECK_MESSAGE(rill_tol::within(score, limits), rill_tol::describe(score, dtype, limits));
      }
    }
  }
}

// A 4-dim tensor view with the given shape at offset_elements into a new buffer.
static rill_backend_tensor tensor4(Context& c, const std::vector<float>& values, rill_dtype dtype,
                                   std::initializer_list<int64_t> shape, uint64_t offset_elements = 0) {
  rill_backend_tensor t = c.tensor(values, dtype, 1, static_cast<int64_t>(values.size()), offset_elements);
  t.ndim = static_cast<int32_t>(shape.size());
  int32_t i = 0;
  for (int64_t dim : shape) t.shape[i++] = dim;
  for (; i < RILL_MAX_DIMS; ++i) t.shape[i] = 1;
  return t;
}

// Prefill and decode on a context: head_dim 160 (two dims per invocation of
// the row kernel, the 256 tile of flash attention), 300 slots (several key
// tiles of both; the decode step splits its keys in two).
static void check_attention_cases(Context& c, rill_dtype dtype) {
  const rill_backend_ops& o = ops();
  const int64_t batch = 2, q_heads = 4, kv_heads = 2, head_dim = 160, slots = 300;
  struct Case {
    int64_t queries;
    std::vector<int32_t> lengths;
  };
  for (const Case& cs : {Case{1, {300, 131}}, Case{129, {129, 200}}}) {
    CAPTURE(cs.queries);
    auto q = round_to(random_values(batch * cs.queries * q_heads * head_dim, 50, -2.0f, 2.0f), dtype);
    auto k = round_to(random_values(batch * slots * kv_heads * head_dim, 51, -2.0f, 2.0f), dtype);
    auto v = round_to(random_values(batch * slots * kv_heads * head_dim, 52), dtype);
    rill_backend_tensor tq = tensor4(c, q, dtype, {batch, cs.queries, q_heads, head_dim}, 3);
    rill_backend_tensor tk = tensor4(c, k, dtype, {batch, slots, kv_heads, head_dim}, 5);
    rill_backend_tensor tv = tensor4(c, v, dtype, {batch, slots, kv_heads, head_dim});
    rill_backend_tensor tout = tensor4(c, std::vector<float>(q.size(), 0.0f), dtype,
                                       {batch, cs.queries, q_heads, head_dim}, 1);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    REQUIRE_MESSAGE(o.attention(c.ctx, &tq, &tk, &tv, cs.lengths.data(), scale, &tout) == RILL_OK, g_last_error);

    const std::vector<double> want = rill_ref::attention(
        q, k, v, {batch, cs.queries, slots, q_heads, kv_heads, head_dim}, cs.lengths, scale);
    check_close(c.read(tout), want, dtype);
  }
}

TEST_CASE("attention over several key tiles and wide heads matches the reference (prefill and decode)") {
  const rill_backend_ops& o = ops();
  REQUIRE(o.struct_size >= offsetof(rill_backend_ops, activation) + sizeof(o.activation));
  // Flash attention (the conformance suite's kernel) once, then the row
  // kernel that devices with less shared memory run, on both reduction paths.
  std::string kernel = "flash";
  CAPTURE(kernel);
  {
    Context flash;
    for (rill_dtype dtype : kDtypes) {
      const std::string dtype_label = dtype_name(dtype);
      CAPTURE(dtype_label);
      check_attention_cases(flash, dtype);
    }
  }
  kernel = "row";
  setenv("RILL_VULKAN_NO_FLASH_ATTENTION", "1", 1);
  for_each_reduction_and_dtype(check_attention_cases);
  unsetenv("RILL_VULKAN_NO_FLASH_ATTENTION");
}

TEST_CASE("attention with a head_dim beyond the kernel's reach is unsupported, with a message") {
  Context c;
  const int64_t head_dim = 264;
  std::vector<float> values(head_dim, 0.5f);
  rill_backend_tensor q = tensor4(c, values, RILL_DTYPE_F32, {1, 1, 1, head_dim});
  rill_backend_tensor k = tensor4(c, values, RILL_DTYPE_F32, {1, 1, 1, head_dim});
  rill_backend_tensor v = tensor4(c, values, RILL_DTYPE_F32, {1, 1, 1, head_dim});
  rill_backend_tensor out = tensor4(c, values, RILL_DTYPE_F32, {1, 1, 1, head_dim});
  const int32_t length = 1;
  CHECK(ops().attention(c.ctx, &q, &k, &v, &length, 1.0f, &out) == RILL_ERROR_UNSUPPORTED);
  CHECK(g_last_error.find("head_dim") != std::string::npos);
}

TEST_CASE("rope and activations match the reference across many elements") {
  Context c;
  for (rill_dtype dtype : kDtypes) {
    const std::string dtype_label = dtype_name(dtype);
    CAPTURE(dtype_label);
    // RoPE, partial rotary, large positions.
    const int64_t tokens = 37, heads = 5, head_dim = 96, rotary = 64;
    std::vector<int32_t> positions(tokens);
    for (int64_t i = 0; i < tokens; ++i) positions[i] = static_cast<int32_t>(i * 997 % 32768);
    auto x = round_to(random_values(tokens * heads * head_dim, 60), dtype);
    rill_backend_tensor tx = tensor4(c, x, dtype, {tokens, heads, head_dim}, 7);
    REQUIRE_MESSAGE(ops().rope(c.ctx, &tx, positions.data(), 10000.0f, static_cast<int32_t>(rotary)) == RILL_OK,
                    g_last_error);
    const std::vector<double> want = rill_ref::rope(x, positions, heads, head_dim, 10000.0, rotary);
    check_close(c.read(tx), want, dtype);

    // Every activation, plain and gated (out aliasing up), over 274
    // workgroups. Launches beyond the 65535 workgroups of one dispatch are in
    // the conformance suite ("launches larger than one pass of a GPU grid").
    const int64_t count = 70000;
    auto a = round_to(random_values(count, 61, -6.0f, 6.0f), dtype);
    auto up = round_to(random_values(count, 62), dtype);
    for (rill_act_fn fn : {RILL_ACT_SILU, RILL_ACT_GELU, RILL_ACT_GELU_TANH, RILL_ACT_RELU}) {
      CAPTURE(static_cast<int>(fn));
      rill_backend_tensor ta = c.tensor(a, dtype, 1, count);
      rill_backend_tensor tup = c.tensor(up, dtype, 1, count, 1);
      REQUIRE(ops().activation(c.ctx, fn, &ta, &tup, &tup) == RILL_OK);
      const std::vector<double> gated = rill_ref::activation(fn, a, up);
      check_close(c.read(tup), gated, dtype);
    }
  }
}

TEST_CASE("rope tables reused across calls give each call its own positions, theta and rotary_dim") {
  Context c;
  const int64_t tokens = 9, heads = 3, head_dim = 64;
  struct Call {
    int32_t first_position;
    float theta;
    int32_t rotary;
  };
  // Repeats hit the cached tables; six different keys evict the oldest of the
  // four kept; the last calls come back to evicted and kept keys.
  const Call calls[] = {{0, 1e4f, 64},   {0, 1e4f, 64},   {100, 1e4f, 64}, {0, 5e5f, 64},   {0, 1e4f, 32},
                        {7, 1e4f, 64},   {3000, 1e4f, 64}, {0, 1e4f, 64},  {100, 1e4f, 64}, {3000, 1e4f, 64}};
  for (const Call& call : calls) {
    CAPTURE(call.first_position);
    CAPTURE(call.theta);
    CAPTURE(call.rotary);
    std::vector<int32_t> positions(tokens);
    for (int64_t i = 0; i < tokens; ++i) positions[i] = call.first_position + static_cast<int32_t>(i);
    auto x = random_values(tokens * heads * head_dim, 90 + call.first_position);
    rill_backend_tensor tx = tensor4(c, x, RILL_DTYPE_F32, {tokens, heads, head_dim}, 3);
    REQUIRE_MESSAGE(ops().rope(c.ctx, &tx, positions.data(), call.theta, call.rotary) == RILL_OK, g_last_error);
    check_close(c.read(tx), rill_ref::rope(x, positions, heads, head_dim, call.theta, call.rotary), RILL_DTYPE_F32);
  }
}

// Runs a chain of dependent ops; with sync_each, synchronizes after each one.
static std::vector<float> run_chain(bool sync_each) {
  Context c;
  const rill_dtype dtype = RILL_DTYPE_F32;
  const int64_t rows = 12, d = 96, n = 80;
  auto sync = [&] {
    if (sync_each) REQUIRE(g_backend->synchronize(c.ctx) == RILL_OK);
  };
  rill_backend_tensor x = c.tensor(random_values(rows * d, 40), dtype, rows, d);
  rill_backend_tensor res = c.tensor(random_values(rows * d, 41), dtype, rows, d);
  rill_backend_tensor w = c.tensor(random_values(n * d, 42), dtype, n, d);
  rill_backend_tensor w2 = c.tensor(random_values(d * n, 43), dtype, d, n);
  rill_backend_tensor h = c.tensor(std::vector<float>(rows * n, 0.0f), dtype, rows, n);
  // Two views into one buffer: the second half receives a copy of the first.
  rill_backend_tensor pair = c.tensor(std::vector<float>(2 * rows * d, 0.0f), dtype, 2 * rows, d);
  rill_backend_tensor first = pair, second = pair;
  first.shape[0] = second.shape[0] = rows;
  second.offset = static_cast<uint64_t>(rows * d * 4);

  REQUIRE(ops().residual_add(c.ctx, &res, &x, nullptr, 1.0f, 1.0f) == RILL_OK);  // res += x
  sync();
  REQUIRE(ops().rms_norm(c.ctx, &res, nullptr, 1e-6f, &x) == RILL_OK);  // x = norm(res)   (RAW on res, WAR on x)
  sync();
  REQUIRE(ops().gemm(c.ctx, &x, &w, nullptr, 1.0f, 0.0f, &h) == RILL_OK);  // h = x w^T    (RAW on x)
  sync();
  REQUIRE(ops().gemm(c.ctx, &h, &w2, nullptr, 1.0f, 1.0f, &first) == RILL_OK);  // first += h w2^T
  sync();
  REQUIRE(ops().fused_add_rms_norm(c.ctx, &first, &res, nullptr, nullptr, 1e-6f, 1.0f, 0.5f) == RILL_OK);
  sync();
  REQUIRE(g_backend->buffer_copy(c.ctx, pair.buffer, first.offset, pair.buffer, second.offset,
                                 static_cast<uint64_t>(rows * d * 4)) == RILL_OK);
  sync();
  c.write(x, random_values(rows * d, 44));  // overwrite x after its last reader (WAR)
  sync();
  REQUIRE(ops().layer_norm(c.ctx, &second, nullptr, nullptr, 1e-5f, &second) == RILL_OK);
  sync();
  REQUIRE(ops().residual_add(c.ctx, &second, &x, nullptr, 1.0f, 1.0f) == RILL_OK);
  sync();
  std::vector<float> out = c.read(pair);
  std::vector<float> tail = c.read(res);
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

TEST_CASE("ops queued without synchronization equal the same ops synchronized after each") {
  std::vector<float> batched = run_chain(false);
  std::vector<float> stepwise = run_chain(true);
  REQUIRE(batched.size() == stepwise.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < batched.size(); ++i) {
    if (std::memcmp(&batched[i], &stepwise[i], sizeof(float)) != 0) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("more queued ops than one command buffer holds all take effect in order") {
  Context c;
  const int64_t cols = 64;
  rill_backend_tensor acc = c.tensor(std::vector<float>(cols, 0.0f), RILL_DTYPE_F32, 1, cols);
  rill_backend_tensor one = c.tensor(std::vector<float>(cols, 1.0f), RILL_DTYPE_F32, 1, cols);
  const int steps = 1300;  // more than two frames of 512 descriptor sets
  for (int i = 0; i < steps; ++i) {
    REQUIRE(ops().residual_add(c.ctx, &acc, &one, nullptr, 1.0f, 1.0f) == RILL_OK);
  }
  for (float v : c.read(acc)) CHECK(v == static_cast<float>(steps));
}

TEST_CASE("errors map to statuses and leave the context usable") {
  Context c;
  rill_backend_buffer* huge = nullptr;
  CHECK(g_backend->buffer_alloc(c.ctx, uint64_t{1} << 52, &huge) == RILL_ERROR_OUT_OF_MEMORY);
  CHECK(huge == nullptr);
  CHECK(g_last_error.find("bytes") != std::string::npos);

  // A buffer copy whose source and destination overlap is refused.
  rill_backend_buffer* buffer = c.alloc(64);
  CHECK(g_backend->buffer_copy(c.ctx, buffer, 0, buffer, 8, 16) == RILL_ERROR_INVALID_ARGUMENT);

  // The context still works.
  rill_backend_tensor t = c.tensor(std::vector<float>(8, 2.0f), RILL_DTYPE_F32, 1, 8);
  REQUIRE(ops().rms_norm(c.ctx, &t, nullptr, 0.0f, &t) == RILL_OK);
  for (float v : c.read(t)) CHECK(v == doctest::Approx(1.0f));
  CHECK(g_backend->synchronize(c.ctx) == RILL_OK);
}

TEST_CASE("many small buffers share memory blocks, and freed ranges are used again") {
  Context c;
  const int count = 2000;
  const uint64_t bytes = 4096;  // 8 MiB in all: one shared block
  std::vector<rill_backend_buffer*> buffers(count);
  const int blocks_before = g_memory_blocks_made;
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    for (int i = 0; i < count; ++i) {
      REQUIRE_MESSAGE(g_backend->buffer_alloc(c.ctx, bytes, &buffers[i]) == RILL_OK, g_last_error);
      const std::vector<int32_t> pattern(bytes / 4, i * 7 + round);
      REQUIRE(g_backend->buffer_write(c.ctx, buffers[i], 0, pattern.data(), bytes) == RILL_OK);
    }
    // Overlapping ranges would show as another buffer's pattern.
    int wrong = 0;
    std::vector<int32_t> got(bytes / 4);
    for (int i = 0; i < count; ++i) {
      REQUIRE(g_backend->buffer_read(c.ctx, buffers[i], 0, got.data(), bytes) == RILL_OK);
      for (int32_t v : got) wrong += v != i * 7 + round ? 1 : 0;
    }
    CHECK(wrong == 0);
    for (rill_backend_buffer* b : buffers) g_backend->buffer_free(c.ctx, b);
    // The second round finds the ranges the first gave back: no new block.
    CHECK(g_memory_blocks_made - blocks_before <= 1);
  }
}

TEST_CASE("contexts on one device share its VkDevice and memory, use each other's buffers, end in any order") {
  for (const bool first_goes_first : {true, false}) {
    CAPTURE(first_goes_first);
    const int devices_before = g_devices_made;
    auto* a = new Context();
    const int blocks_before = g_memory_blocks_made;
    auto* b = new Context();
    CHECK(g_devices_made - devices_before == 1);  // one VkDevice for both
    CHECK(g_memory_blocks_made == blocks_before);  // b's first buffer took a range of a's block
    REQUIRE(ops().shares_buffers(b->ctx, a->ctx) == RILL_OK);
    REQUIRE(ops().shares_buffers(a->ctx, b->ctx) == RILL_OK);

    // x is a's; b adds it into its own y, then whichever context is left does.
    const std::vector<float> xs = random_values(300, 1, -1.0f, 1.0f), ys = random_values(300, 2, -1.0f, 1.0f);
    rill_backend_buffer* x = nullptr;
    REQUIRE(g_backend->buffer_alloc(a->ctx, xs.size() * 4, &x) == RILL_OK);
    rill_backend_tensor tx{};
    tx.buffer = x;
    tx.dtype = RILL_DTYPE_F32;
    tx.ndim = 1;
    tx.shape[0] = 300;
    tx.shape[1] = tx.shape[2] = tx.shape[3] = 1;
    a->write(tx, xs);
    REQUIRE(g_backend->synchronize(a->ctx) == RILL_OK);
    rill_backend_tensor ty = b->tensor(ys, RILL_DTYPE_F32, 0, 300);
    Context* first = first_goes_first ? a : b;
    Context* last = first_goes_first ? b : a;
    REQUIRE(ops().residual_add(b->ctx, &ty, &tx, nullptr, 1.0f, 1.0f) == RILL_OK);
    std::vector<float> want(300);
    for (size_t i = 0; i < want.size(); ++i) want[i] = ys[i] + xs[i];
    CHECK(b->read(ty) == want);
    delete first;
    rill_backend_tensor again = last->tensor(ys, RILL_DTYPE_F32, 0, 300);
    REQUIRE(ops().residual_add(last->ctx, &again, &tx, nullptr, 1.0f, 1.0f) == RILL_OK);
    CHECK(last->read(again) == want);
    g_backend->buffer_free(last->ctx, x);  // through b after a is gone, or through a
    delete last;
    // The last context destroyed the device: the next one makes a new one.
    const int devices_after = g_devices_made;
    { Context c; }
    CHECK(g_devices_made - devices_after == 1);
  }
}

// maxMemoryAllocationSize of the device the plugin calls `name`, read through
// Vulkan itself; 0 when no such device is found.
static uint64_t max_allocation_of(const char* name) {
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) return 0;
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  uint64_t limit = 0;
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceMaintenance3Properties maintenance3{};
    maintenance3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
    VkPhysicalDeviceProperties2 props{};
    props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    props.pNext = &maintenance3;
    vkGetPhysicalDeviceProperties2(device, &props);
    if (std::strcmp(props.properties.deviceName, name) == 0) limit = maintenance3.maxMemoryAllocationSize;
  }
  vkDestroyInstance(instance, nullptr);
  return limit;
}

TEST_CASE("a buffer larger than maxMemoryAllocationSize is refused, naming both sizes") {
  rill_backend_device_info device{};
  device.struct_size = sizeof device;
  REQUIRE(g_backend->describe_device(0, &device) == RILL_OK);
  const uint64_t limit = max_allocation_of(device.name);
  REQUIRE(limit > 0);
  Context c;
  rill_backend_buffer* buffer = nullptr;
  CHECK(g_backend->buffer_alloc(c.ctx, limit + 1, &buffer) == RILL_ERROR_OUT_OF_MEMORY);
  CHECK(buffer == nullptr);
  CHECK(g_last_error.find(std::to_string(limit + 1) + " bytes") != std::string::npos);
  CHECK(g_last_error.find("maxMemoryAllocationSize, " + std::to_string(limit) + " bytes") != std::string::npos);
  // A buffer of its own block (over half a block) still works beside the
  // shared ones; 80 MiB are read in more than one staging batch.
  const std::vector<float> values = random_values(20u << 20, 70);
  rill_backend_tensor big = c.tensor(values, RILL_DTYPE_F32, 1, 20 << 20);
  CHECK(c.read(big) == values);
}

TEST_CASE("a read that starts in a frame with its staging nearly spent returns the bytes just written") {
  Context c;
  // 60 MiB of writes stay queued in one frame's 64 MiB of staging; the read's
  // first piece then moves to the next frame, and its pieces alternate frames.
  const std::vector<float> values = random_values(15u << 20, 85);
  rill_backend_buffer* buffer = c.alloc(values.size() * 4);
  REQUIRE(g_backend->buffer_write(c.ctx, buffer, 0, values.data(), values.size() * 4) == RILL_OK);
  std::vector<float> got(values.size() / 3 + 5, 0.0f);  // 20 MiB and 20 bytes: two pieces
  REQUIRE_MESSAGE(g_backend->buffer_read(c.ctx, buffer, 8, got.data(), got.size() * 4) == RILL_OK, g_last_error);
  CHECK(std::equal(got.begin(), got.end(), values.begin() + 2));
}

TEST_CASE("a buffer freed while queued ops still read it is destroyed only after they ran") {
  Context c;
  const int64_t cols = 4096;
  const std::vector<float> x = random_values(cols, 80), w = random_values(cols, 81, 0.5f, 1.5f);
  rill_backend_tensor out = c.tensor(std::vector<float>(cols, 0.0f), RILL_DTYPE_F32, 1, cols);
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    // Not tracked by Context: freed right after the ops that read them are queued.
    rill_backend_tensor tx = c.tensor(x, RILL_DTYPE_F32, 1, cols);
    rill_backend_tensor tw = c.tensor(w, RILL_DTYPE_F32, 0, cols);
    c.buffers.resize(c.buffers.size() - 2);
    REQUIRE(ops().rms_norm(c.ctx, &tx, &tw, 1e-6f, &out) == RILL_OK);
    g_backend->buffer_free(c.ctx, tx.buffer);
    g_backend->buffer_free(c.ctx, tw.buffer);
    // New buffers may take the freed memory only once the ops have run.
    rill_backend_tensor scratch = c.tensor(std::vector<float>(cols, NAN), RILL_DTYPE_F32, 1, cols);
    REQUIRE(ops().residual_add(c.ctx, &scratch, &scratch, nullptr, 1.0f, 1.0f) == RILL_OK);
    check_close(c.read(out), norm_reference(x, w, {}, 1e-6f, false, 1, cols), RILL_DTYPE_F32);
  }
}

// The bytes of the file at path (empty when it cannot be read).
static std::vector<char> file_bytes(const std::string& path) {
  std::vector<char> bytes;
  if (FILE* file = std::fopen(path.c_str(), "rb")) {
    char chunk[4096];
    for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, file)) > 0;) bytes.insert(bytes.end(), chunk, chunk + n);
    std::fclose(file);
  }
  return bytes;
}

static void write_file(const std::string& path, const std::vector<char>& bytes) {
  FILE* file = std::fopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), file);
  std::fclose(file);
}

// A context on device 0 with one [backend.vulkan] option, checked first.
static rill_backend_context* context_with(const rill_backend_option& option) {
  uint32_t rejected = 99;
  REQUIRE_MESSAGE(g_backend->check_options(&option, 1, &rejected) == RILL_OK, g_last_error);
  CHECK(rejected == 99);  // set only for a refusal (rill_backend.h)
  rill_backend_context_options options{};
  options.struct_size = sizeof options;
  options.options = &option;
  options.option_count = 1;
  rill_backend_context* ctx = nullptr;
  REQUIRE_MESSAGE(g_backend->context_create(&options, &ctx) == RILL_OK, g_last_error);
  return ctx;
}

static rill_backend_option priority_option(double priority) {
  rill_backend_option option{};
  option.key = "queue_priority";
  option.type = RILL_BACKEND_OPTION_FLOAT;
  option.float_value = priority;
  return option;
}

// Creates a context with option, runs an rms_norm on it against the
// reference, and destroys it (writing a pipeline cache the option names).
static void run_with(const rill_backend_option& option) {
  rill_backend_context* ctx = context_with(option);
  const std::vector<float> x = random_values(300, 95);
  std::vector<float> out(x.size(), 0.0f);
  rill_backend_buffer* buffer = nullptr;
  REQUIRE(g_backend->buffer_alloc(ctx, 2 * x.size() * 4, &buffer) == RILL_OK);
  REQUIRE(g_backend->buffer_write(ctx, buffer, 0, x.data(), x.size() * 4) == RILL_OK);
  rill_backend_tensor tx{}, tout{};
  tx.buffer = tout.buffer = buffer;
  tx.dtype = tout.dtype = RILL_DTYPE_F32;
  tx.ndim = tout.ndim = 1;
  tx.shape[0] = tout.shape[0] = static_cast<int64_t>(x.size());
  tx.shape[1] = tx.shape[2] = tx.shape[3] = tout.shape[1] = tout.shape[2] = tout.shape[3] = 1;
  tout.offset = x.size() * 4;
  REQUIRE(ops().rms_norm(ctx, &tx, nullptr, 1e-6f, &tout) == RILL_OK);
  REQUIRE(g_backend->buffer_read(ctx, buffer, tout.offset, out.data(), out.size() * 4) == RILL_OK);
  check_close(out, norm_reference(x, {}, {}, 1e-6f, false, 1, static_cast<int64_t>(x.size())), RILL_DTYPE_F32);
  g_backend->buffer_free(ctx, buffer);
  g_backend->context_destroy(ctx);
}

static void run_with_pipeline_cache(const std::string& path) {
  rill_backend_option option{};
  option.key = "pipeline_cache";
  option.type = RILL_BACKEND_OPTION_STRING;
  option.string_value = path.c_str();
  run_with(option);
}

TEST_CASE("the pipeline cache is written on destruction, reused, and a corrupt or foreign file is ignored") {
  char folder_template[] = "/tmp/rill-vulkan-cache-XXXXXX";
  REQUIRE(mkdtemp(folder_template) != nullptr);
  const std::string path = std::string(folder_template) + "/pipelines.bin";

  g_pipeline_cache_log.clear();
  run_with_pipeline_cache(path);  // no file yet
  CHECK(g_pipeline_cache_log.find("not used: cannot be opened") != std::string::npos);
  CHECK(g_pipeline_cache_level == RILL_LOG_INFO);  // the first run: nothing wrong
  const std::vector<char> written = file_bytes(path);
  VkPipelineCacheHeaderVersionOne header{};
  REQUIRE(written.size() >= sizeof header);
  std::memcpy(&header, written.data(), sizeof header);
  CHECK(header.headerVersion == VK_PIPELINE_CACHE_HEADER_VERSION_ONE);

  g_pipeline_cache_log.clear();
  run_with_pipeline_cache(path);  // the file of the first run
  CHECK(g_pipeline_cache_log.empty());

  // Garbage, a truncated header, and a header of another vendor.
  std::vector<char> foreign = written;
  header.vendorID ^= 0x5a5a;
  std::memcpy(foreign.data(), &header, sizeof header);
  const std::vector<char> garbage(5000, '\x7f');
  const std::vector<char> truncated(written.begin(), written.begin() + 10);
  // Not a structured binding: CAPTURE's lambda cannot capture one in C++17 (clang refuses it).
  for (const auto& spoiled : {std::pair{garbage, "the header size is invalid"},
                              std::pair{truncated, "shorter than a pipeline cache header"},
                              std::pair{foreign, "made for another device"}}) {
    const std::vector<char>& bytes = spoiled.first;
    const char* why = spoiled.second;
    CAPTURE(why);
    write_file(path, bytes);
    g_pipeline_cache_log.clear();
    run_with_pipeline_cache(path);
    CHECK(g_pipeline_cache_log.find(why) != std::string::npos);
    CHECK(g_pipeline_cache_level == RILL_LOG_WARNING);
    // Rewritten as a valid cache by the context that ignored it.
    CHECK(file_bytes(path).size() >= sizeof header);
    CHECK(file_bytes(path) != bytes);
  }
  std::remove(path.c_str());
  rmdir(folder_template);
}

TEST_CASE("queue_priority: a context with it works; contexts share a VkDevice only with the same priority") {
  run_with(priority_option(0.25));
  const int devices_before = g_devices_made;
  rill_backend_context* low = context_with(priority_option(0.25));
  rill_backend_context* low_too = context_with(priority_option(0.25));
  rill_backend_context* high = context_with(priority_option(1.0));
  CHECK(g_devices_made - devices_before == 2);
  CHECK(ops().shares_buffers(low_too, low) == RILL_OK);
  g_last_error.clear();
  CHECK(ops().shares_buffers(high, low) == RILL_ERROR_INVALID_ARGUMENT);
  for (const char* part : {"different VkDevices", "queue priority 1", "queue priority 0.25", "queue priority,"}) {
    CHECK_MESSAGE(g_last_error.find(part) != std::string::npos, std::string(part), " missing from: ", g_last_error);
  }
  for (rill_backend_context* ctx : {low, low_too, high}) g_backend->context_destroy(ctx);
}

TEST_CASE("queue_priority out of 0.0 to 1.0, NaN or not a float is refused, naming key, range and value") {
  rill_backend_option text{};
  text.key = "queue_priority";
  text.type = RILL_BACKEND_OPTION_STRING;
  text.string_value = "high";
  // Not a structured binding: CAPTURE's lambda cannot capture one in C++17.
  for (const auto& refused : {std::pair{priority_option(-0.1), "expected 0.0 to 1.0, got -0.1"},
                              std::pair{priority_option(1.5), "expected 0.0 to 1.0, got 1.5"},
                              std::pair{priority_option(std::nan("")), "expected 0.0 to 1.0, got nan"},
                              std::pair{text, "expected a float, got a string"}}) {
    const char* says = refused.second;
    CAPTURE(says);
    uint32_t rejected = 99;
    g_last_error.clear();
    CHECK(g_backend->check_options(&refused.first, 1, &rejected) == RILL_ERROR_CONFIG);
    CHECK(rejected == 0);
    CHECK_MESSAGE(g_last_error.find(std::string("'queue_priority': ") + says) != std::string::npos, g_last_error);
  }
}

TEST_CASE("RILL_VULKAN_TEST_MAX_GROUPS out of 1 to 65535 or not an integer fails the context, naming both") {
  for (const char* value : {"0", "65536", "12x", ""}) {
    CAPTURE(value);
    setenv("RILL_VULKAN_TEST_MAX_GROUPS", value, 1);
    rill_backend_context_options options{};
    options.struct_size = sizeof options;
    rill_backend_context* ctx = nullptr;
    g_last_error.clear();
    CHECK(g_backend->context_create(&options, &ctx) == RILL_ERROR_INVALID_ARGUMENT);
    CHECK(ctx == nullptr);
    if (ctx != nullptr) g_backend->context_destroy(ctx);
    CHECK_MESSAGE(g_last_error.find(std::string("RILL_VULKAN_TEST_MAX_GROUPS must be an integer from 1 to 65535, "
                                                "given \"") + value + "\"") != std::string::npos,
                  g_last_error);
  }
  unsetenv("RILL_VULKAN_TEST_MAX_GROUPS");
}

int main(int argc, char** argv) {
  if (const int loaded = load_plugin_with_device(RILL_VULKAN_PLUGIN, "Vulkan", &g_host, g_last_error, &g_backend);
      loaded != 0) {
    return loaded;
  }
  const char* validation = std::getenv("RILL_VULKAN_VALIDATION");
  if (validation != nullptr && std::strcmp(validation, "1") == 0) {
    rill_backend_context_options options{};
    options.struct_size = sizeof options;
    rill_backend_context* probe = nullptr;
    if (g_backend->context_create(&options, &probe) == RILL_ERROR_BACKEND_UNAVAILABLE &&
        g_last_error.find("validation") != std::string::npos) {
      std::printf("skipped: %s\n", g_last_error.c_str());
      return 77;
    }
    g_backend->context_destroy(probe);
  }

  const char* coopmat = std::getenv("RILL_TEST_COOPMAT");
  if (coopmat != nullptr && std::strcmp(coopmat, "1") == 0) {
    rill_backend_device_info info{};
    info.struct_size = sizeof info;
    if (g_backend->describe_device(0, &info) != RILL_OK || std::strstr(info.details, "cooperative matrix: f16 ") == nullptr) {
      std::printf("skipped: device 0 (%s) runs no cooperative-matrix GEMM: %s\n", info.name, info.details);
      return 77;
    }
  }

  doctest::Context runner(argc, argv);
  int result = runner.run();
  if (!g_validation_logs.empty()) {
    std::printf("%zu validation message(s), the first: %s\n", g_validation_logs.size(),
                g_validation_logs.front().c_str());
    result = result != 0 ? result : 1;
  }
  // The plugin stays loaded until exit, as the runtime keeps it.
  return result;
}
