// Two threads, each with its own context, running ops at the same time: each
// must get exactly the result a single thread gets, and errors on one thread
// must not show up in the other's rill_last_error().
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rill.h"

namespace {

constexpr int64_t kRows = 16;
// Rows past the CPU backend's few-rows GEMM: its many-row (panel) kernel.
constexpr int64_t kManyRows = 40;
constexpr int64_t kDim = 64;
constexpr int kSteps = 40;

// Runs kSteps of fused add+RMSNorm and a GEMM on `rows` rows of `dtype` on a
// fresh CPU context seeded by seed, with a pool of pool_threads; returns the
// final residual (empty on failure, with error set).
std::vector<float> run_stream(unsigned seed, std::string& error, int pool_threads = 1,
                              rill_dtype dtype = RILL_DTYPE_F32, int64_t rows = kRows) {
  rill_context* ctx = nullptr;
  const std::string config =
      "[runtime]\nbackend = \"cpu\"\n[backend.cpu]\nthreads = " + std::to_string(pool_threads) + "\n";
  if (rill_context_create(config.c_str(), &ctx) != RILL_OK) {
    error = rill_last_error();
    return {};
  }
  const int64_t shape[2] = {rows, kDim}, square[2] = {kDim, kDim}, vec[1] = {kDim};
  rill_tensor *x = nullptr, *residual = nullptr, *w = nullptr, *norm_weight = nullptr, *y = nullptr;
  std::vector<float> values(rows * kDim), weights(kDim * kDim), norm(kDim), result;
  unsigned state = seed;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
  };
  for (float& v : values) v = next();
  for (float& v : weights) v = next() * 0.25f;
  for (float& v : norm) v = 1.0f + next();
  bool ok = rill_tensor_create(ctx, dtype, 2, shape, &x) == RILL_OK &&
            rill_tensor_create(ctx, dtype, 2, shape, &residual) == RILL_OK &&
            rill_tensor_create(ctx, dtype, 2, shape, &y) == RILL_OK &&
            rill_tensor_create(ctx, dtype, 2, square, &w) == RILL_OK &&
            rill_tensor_create(ctx, dtype, 1, vec, &norm_weight) == RILL_OK &&
            rill_tensor_write_f32(x, values.data(), values.size()) == RILL_OK &&
            rill_tensor_write_f32(residual, values.data(), values.size()) == RILL_OK &&
            rill_tensor_write_f32(w, weights.data(), weights.size()) == RILL_OK &&
            rill_tensor_write_f32(norm_weight, norm.data(), norm.size()) == RILL_OK;
  for (int step = 0; ok && step < kSteps; ++step) {
    ok = rill_fused_add_rms_norm(ctx, x, residual, nullptr, norm_weight, 1e-6f, 1.0f, 1.0f) == RILL_OK &&
         rill_gemm(ctx, x, w, nullptr, 1.0f, 0.0f, y) == RILL_OK && rill_residual_add(ctx, residual, y, nullptr, 1.0f, 0.1f) == RILL_OK;
    // An error on this thread in the middle of the work: visible here only.
    ok = ok && rill_rms_norm(ctx, x, w, 1e-6f, y) == RILL_ERROR_SHAPE;
  }
  if (ok) {
    result.resize(values.size());
    ok = rill_tensor_read_f32(residual, result.data(), result.size()) == RILL_OK;
  }
  if (!ok) {
    error = rill_last_error();
    result.clear();
  }
  for (rill_tensor* t : {x, residual, y, w, norm_weight}) rill_tensor_destroy(t);
  rill_context_destroy(ctx);
  return result;
}

}  // namespace

TEST_CASE("two contexts on two threads at once give the single-threaded results") {
  std::string error_a, error_b;
  const std::vector<float> expected_a = run_stream(1, error_a);
  const std::vector<float> expected_b = run_stream(2, error_b);
  REQUIRE_MESSAGE(!expected_a.empty(), error_a);
  REQUIRE_MESSAGE(!expected_b.empty(), error_b);
  for (int round = 0; round < 3; ++round) {
    std::vector<float> got_a, got_b;
    std::atomic<int> ready{0};
    auto worker = [&ready](unsigned seed, std::vector<float>& out, std::string& error) {
      ++ready;
      while (ready.load() < 2) std::this_thread::yield();  // start together
      out = run_stream(seed, error);
    };
    std::thread a(worker, 1u, std::ref(got_a), std::ref(error_a));
    std::thread b(worker, 2u, std::ref(got_b), std::ref(error_b));
    a.join();
    b.join();
    REQUIRE_MESSAGE(got_a.size() == expected_a.size(), error_a);
    REQUIRE_MESSAGE(got_b.size() == expected_b.size(), error_b);
    CHECK(std::memcmp(got_a.data(), expected_a.data(), got_a.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(got_b.data(), expected_b.data(), got_b.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("contexts with thread pools on two threads at once give the single-threaded results") {
  // f32 decode-sized GEMMs, and f16 and bf16 ones with enough rows for the
  // many-row kernel.
  const struct {
    rill_dtype dtype;
    int64_t rows;
  } streams[] = {{RILL_DTYPE_F32, kRows}, {RILL_DTYPE_F16, kManyRows}, {RILL_DTYPE_BF16, kManyRows}};
  for (const auto& stream : streams) {
    INFO(rill_dtype_name(stream.dtype) << ", " << stream.rows << " rows");
    std::string error_a, error_b;
    const std::vector<float> expected = run_stream(3, error_a, 1, stream.dtype, stream.rows);
    REQUIRE_MESSAGE(!expected.empty(), error_a);
    std::vector<float> got_a, got_b;
    std::thread a([&] { got_a = run_stream(3, error_a, 4, stream.dtype, stream.rows); });
    std::thread b([&] { got_b = run_stream(3, error_b, 3, stream.dtype, stream.rows); });
    a.join();
    b.join();
    REQUIRE_MESSAGE(got_a.size() == expected.size(), error_a);
    REQUIRE_MESSAGE(got_b.size() == expected.size(), error_b);
    CHECK(std::memcmp(got_a.data(), expected.data(), got_a.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(got_b.data(), expected.data(), got_b.size() * sizeof(float)) == 0);
  }
}

namespace {
std::atomic<int> g_messages_a{0}, g_messages_b{0};
void count_a(rill_log_level, const char*, void*) { ++g_messages_a; }
void count_b(rill_log_level, const char*, void*) { ++g_messages_b; }
}  // namespace

TEST_CASE("the log callback can be replaced while other threads log") {
  constexpr int kThreads = 3;
  std::atomic<bool> stop{false};
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      while (!stop.load()) {  // each context creation logs its backend selection
        rill_context* ctx = nullptr;
        if (rill_context_create("[runtime]\nbackend = \"cpu\"\n[backend.cpu]\nthreads = 1\n", &ctx) != RILL_OK) {
          failures[i] = rill_last_error();
          return;
        }
        rill_context_destroy(ctx);
      }
    });
  }
  for (int swap = 0; swap < 200; ++swap)
    REQUIRE(rill_set_log_callback(swap % 2 == 0 ? count_a : count_b, nullptr, RILL_LOG_DEBUG) == RILL_OK);
  REQUIRE(rill_set_log_callback(nullptr, nullptr, RILL_LOG_DEBUG) == RILL_OK);
  const int a = g_messages_a.load(), b = g_messages_b.load();
  stop = true;
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) CHECK_MESSAGE(failures[i].empty(), "thread ", i, ": ", failures[i]);
  // Once the callback is cleared, neither counter moves.
  CHECK(g_messages_a.load() == a);
  CHECK(g_messages_b.load() == b);
}

TEST_CASE("a failure on one thread leaves the other thread's last error alone") {
  std::atomic<int> phase{0};
  std::string seen_by_b;
  std::thread a([&] {
    rill_context* ctx = nullptr;
    CHECK(rill_context_create("bogus_key = 1\n", &ctx) == RILL_ERROR_CONFIG);
    phase = 1;
    while (phase.load() < 2) std::this_thread::yield();
    CHECK(std::string(rill_last_error()).find("bogus_key") != std::string::npos);
  });
  std::thread b([&] {
    rill_context* ctx = nullptr;
    CHECK(rill_context_create("[runtime]\nprefer = []\n", &ctx) == RILL_ERROR_CONFIG);
    while (phase.load() < 1) std::this_thread::yield();
    seen_by_b = rill_last_error();
    phase = 2;
  });
  a.join();
  b.join();
  CHECK(seen_by_b.find("runtime.prefer") != std::string::npos);
  CHECK(seen_by_b.find("bogus_key") == std::string::npos);
}

namespace {
// Counts the plugin's "initialised" messages (it logs one per rill_plugin_init).
std::atomic<int> g_plugin_inits{0};
void count_inits(rill_log_level, const char* message, void*) {
  if (std::string(message).find("fakehost: initialised") != std::string::npos) ++g_plugin_inits;
}
}  // namespace

TEST_CASE("threads racing to load the same plugin all get it, initialised once") {
  REQUIRE(rill_set_log_callback(count_inits, nullptr, RILL_LOG_DEBUG) == RILL_OK);
  const std::string config =
      std::string("[runtime]\nbackend = \"fakehost\"\nplugin_dir = \"") + RILL_FAKE_PLUGIN_DIR + "\"\n";
  constexpr int kThreads = 4;
  std::atomic<int> ready{0};
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      rill_context* ctx = nullptr;
      if (rill_context_create(config.c_str(), &ctx) != RILL_OK) {
        failures[i] = rill_last_error();
        return;
      }
      const int64_t shape[1] = {3};
      rill_tensor *r = nullptr, *u = nullptr;
      const float values[3] = {1.0f, 2.0f, 3.0f};
      float out[3] = {0, 0, 0};
      if (rill_tensor_create(ctx, RILL_DTYPE_F32, 1, shape, &r) != RILL_OK ||
          rill_tensor_create(ctx, RILL_DTYPE_F32, 1, shape, &u) != RILL_OK ||
          rill_tensor_write_f32(r, values, 3) != RILL_OK || rill_tensor_write_f32(u, values, 3) != RILL_OK ||
          rill_residual_add(ctx, r, u, nullptr, 1.0f, static_cast<float>(i)) != RILL_OK ||
          rill_tensor_read_f32(r, out, 3) != RILL_OK) {
        failures[i] = rill_last_error();
      } else if (out[2] != 3.0f + 3.0f * static_cast<float>(i)) {
        failures[i] = "wrong result " + std::to_string(out[2]);
      }
      rill_context_destroy(ctx);
    });
  }
  for (std::thread& t : threads) t.join();
  REQUIRE(rill_set_log_callback(nullptr, nullptr, RILL_LOG_DEBUG) == RILL_OK);
  for (int i = 0; i < kThreads; ++i) CHECK_MESSAGE(failures[i].empty(), "thread ", i, ": ", failures[i]);
  CHECK(g_plugin_inits.load() == 1);
}
