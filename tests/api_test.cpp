// Bad input for every entry point of rill.h, each with the status it must get
// and a message naming the argument; plus the library-level functions and the
// tensor round trips. Backend failures (UNSUPPORTED, BACKEND) are covered with
// the fake plugins in plugin_loader_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "rill.h"
#include "test_helpers.h"

// Under AddressSanitizer a huge allocation aborts by default; these tests need
// it to fail the ordinary way, returning NULL, to reach RILL_ERROR_OUT_OF_MEMORY.
extern "C" __attribute__((visibility("default"), used)) const char* __asan_default_options();
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace {

using Context = rill_test::ScopedContext;
using rill_test::expect_failure;
using rill_test::kCpuConfig;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("library: version, status and dtype names") {
  CHECK(rill_version_number() == RILL_VERSION_NUMBER);
  CHECK(std::string(rill_status_string(RILL_OK)) == "RILL_OK");
  CHECK(std::string(rill_status_string(RILL_ERROR_SHAPE)) == "RILL_ERROR_SHAPE");
  CHECK(std::string(rill_status_string(RILL_ERROR_INTERNAL)) == "RILL_ERROR_INTERNAL");
  CHECK(std::string(rill_status_string(RILL_ERROR_NOT_FOUND)) == "RILL_ERROR_NOT_FOUND");
  CHECK(std::string(rill_status_string(static_cast<rill_status>(12))) == "RILL_STATUS_UNKNOWN");
  CHECK(std::string(rill_status_string(RILL_STATUS_MAX_ENUM)) == "RILL_STATUS_UNKNOWN");
  CHECK(rill_dtype_size(RILL_DTYPE_F32) == 4);
  CHECK(rill_dtype_size(RILL_DTYPE_F16) == 2);
  CHECK(rill_dtype_size(RILL_DTYPE_BF16) == 2);
  CHECK(rill_dtype_size(static_cast<rill_dtype>(10)) == 0);
  CHECK(std::string(rill_dtype_name(RILL_DTYPE_BF16)) == "bf16");
  CHECK(std::string(rill_dtype_name(static_cast<rill_dtype>(99))) == "invalid");
}

TEST_CASE("library: the last error is per thread and empty before any failure") {
  std::string fresh = "unset";
  std::thread([&] { fresh = rill_last_error(); }).join();
  CHECK(fresh.empty());
  rill_context* ctx = nullptr;
  expect_failure(rill_context_create(nullptr, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"out_ctx"});
  std::string other = "unset";
  std::thread([&] { other = rill_last_error(); }).join();
  CHECK(other.empty());
  CHECK(ctx == nullptr);
}

namespace {
struct LogRecord {
  std::vector<std::string> messages;
};
void record_log(rill_log_level level, const char* message, void* user_data) {
  CHECK(level >= RILL_LOG_INFO);
  static_cast<LogRecord*>(user_data)->messages.push_back(message);
}
}  // namespace

TEST_CASE("rill_set_log_callback: checks the level and routes selection messages") {
  LogRecord record;
  expect_failure(rill_set_log_callback(record_log, &record, static_cast<rill_log_level>(4)),
                 RILL_ERROR_INVALID_ARGUMENT, {"min_level", "got 4"});
  const int negative = -static_cast<int>(record.messages.size()) - 1;  // -1, not a constant
  expect_failure(rill_set_log_callback(record_log, &record, static_cast<rill_log_level>(negative)),
                 RILL_ERROR_INVALID_ARGUMENT, {"min_level", "got -1"});
  REQUIRE(rill_set_log_callback(record_log, &record, RILL_LOG_INFO) == RILL_OK);
  { Context context; }
  REQUIRE(rill_set_log_callback(nullptr, nullptr, RILL_LOG_DEBUG) == RILL_OK);
  bool saw_choice = false;
  for (const std::string& m : record.messages) saw_choice = saw_choice || m.find("cpu: chosen") != std::string::npos;
  CHECK_MESSAGE(saw_choice, "no 'cpu: chosen' among ", record.messages.size(), " messages");
  const size_t seen = record.messages.size();
  { Context context; }
  CHECK(record.messages.size() == seen);  // the callback is gone
}

TEST_CASE("rill_context_create and _from_file: bad arguments") {
  rill_context* untouched = reinterpret_cast<rill_context*>(0x1);
  expect_failure(rill_context_create(kCpuConfig, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"rill_context_create", "out_ctx"});
  expect_failure(rill_context_create_from_file(nullptr, &untouched), RILL_ERROR_INVALID_ARGUMENT, {"path", "NULL"});
  expect_failure(rill_context_create_from_file("rill.toml", nullptr), RILL_ERROR_INVALID_ARGUMENT, {"out_ctx"});
  expect_failure(rill_context_create_from_file("/nonexistent/rill.toml", &untouched), RILL_ERROR_IO,
                 {"/nonexistent/rill.toml", "No such file"});
  expect_failure(rill_context_create_from_file("/", &untouched), RILL_ERROR_IO, {"not a regular file"});
  expect_failure(rill_context_create("[runtime]\nbackend = \"no_such_plugin\"\n", &untouched),
                 RILL_ERROR_BACKEND_UNAVAILABLE, {"no_such_plugin", "librill-no_such_plugin.so not found"});
  CHECK(untouched == reinterpret_cast<rill_context*>(0x1));
}

TEST_CASE("context accessors and destroy accept NULL") {
  rill_context_destroy(nullptr);
  CHECK(std::string(rill_context_backend_name(nullptr)).empty());
  CHECK(std::string(rill_context_device_name(nullptr)).empty());
  CHECK(std::string(rill_context_selection_report(nullptr)).empty());
  expect_failure(rill_context_synchronize(nullptr), RILL_ERROR_INVALID_ARGUMENT, {"rill_context_synchronize", "ctx"});
  Context context;
  CHECK(std::string(rill_context_backend_name(context.ctx)) == "cpu");
  CHECK(!std::string(rill_context_device_name(context.ctx)).empty());
  CHECK(std::string(rill_context_selection_report(context.ctx)) == "cpu: chosen");
  CHECK(rill_context_synchronize(context.ctx) == RILL_OK);
}

TEST_CASE("rill_tensor_create: bad arguments") {
  Context context;
  rill_context* ctx = context.ctx;
  rill_tensor* untouched = nullptr;
  const int64_t shape[4] = {2, 3, 4, 5};
  expect_failure(rill_tensor_create(nullptr, RILL_DTYPE_F32, 1, shape, &untouched), RILL_ERROR_INVALID_ARGUMENT, {"ctx"});
  expect_failure(rill_tensor_create(ctx, static_cast<rill_dtype>(10), 1, shape, &untouched),
                 RILL_ERROR_INVALID_ARGUMENT, {"dtype", "got unknown value 10"});
  expect_failure(rill_tensor_create(ctx, RILL_DTYPE_F32, 0, shape, &untouched), RILL_ERROR_INVALID_ARGUMENT,
                 {"ndim", "1 to 4", "got 0"});
  expect_failure(rill_tensor_create(ctx, RILL_DTYPE_F32, 5, shape, &untouched), RILL_ERROR_INVALID_ARGUMENT,
                 {"ndim", "got 5"});
  expect_failure(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, nullptr, &untouched), RILL_ERROR_INVALID_ARGUMENT, {"shape"});
  expect_failure(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, shape, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"out_tensor"});
  const int64_t zero[2] = {4, 0};
  expect_failure(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, zero, &untouched), RILL_ERROR_SHAPE,
                 {"shape[1]", ">= 1", "got 0"});
  const int64_t negative[1] = {-3};
  expect_failure(rill_tensor_create(ctx, RILL_DTYPE_F16, 1, negative, &untouched), RILL_ERROR_SHAPE, {"got -3"});
  const int64_t overflow[2] = {int64_t{1} << 40, int64_t{1} << 40};
  expect_failure(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, overflow, &untouched), RILL_ERROR_SHAPE, {"overflows"});
  // 2^62 bytes fits in size_t but in no machine's memory.
  const int64_t absurd[2] = {int64_t{1} << 30, int64_t{1} << 30};
  expect_failure(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, absurd, &untouched), RILL_ERROR_OUT_OF_MEMORY,
                 {"rill_tensor_create"});
  CHECK(untouched == nullptr);
}

TEST_CASE("tensor accessors") {
  rill_tensor_destroy(nullptr);
  CHECK(rill_tensor_dtype(nullptr) == RILL_DTYPE_MAX_ENUM);
  CHECK(rill_tensor_ndim(nullptr) == 0);
  CHECK(rill_tensor_dim(nullptr, 0) == 0);
  CHECK(rill_tensor_numel(nullptr) == 0);
  CHECK(rill_tensor_nbytes(nullptr) == 0);
  CHECK(rill_tensor_context(nullptr) == nullptr);
  Context context;
  rill_tensor* t = context.tensor({3, 5, 7}, RILL_DTYPE_BF16);
  CHECK(rill_tensor_dtype(t) == RILL_DTYPE_BF16);
  CHECK(rill_tensor_ndim(t) == 3);
  CHECK(rill_tensor_dim(t, 2) == 7);
  CHECK(rill_tensor_dim(t, 3) == 0);
  CHECK(rill_tensor_dim(t, -1) == 0);
  CHECK(rill_tensor_numel(t) == 105);
  CHECK(rill_tensor_nbytes(t) == 210);
  CHECK(rill_tensor_context(t) == context.ctx);
  rill_tensor_destroy(t);
  // A tensor left alive is freed by rill_context_destroy (checked under ASan).
  context.tensor({4});
}

TEST_CASE("tensor transfers: bad arguments and round trips") {
  Context context;
  rill_tensor* t = context.tensor({2, 3}, RILL_DTYPE_F16);
  std::vector<float> values = {1.0f, -2.0f, 0.5f, 65504.0f, -0.0f, 3.0f};
  std::vector<uint16_t> raw(6);
  float f = 0;
  expect_failure(rill_tensor_write(nullptr, raw.data(), 12), RILL_ERROR_INVALID_ARGUMENT, {"rill_tensor_write", "tensor"});
  expect_failure(rill_tensor_write(t, nullptr, 12), RILL_ERROR_INVALID_ARGUMENT, {"src"});
  expect_failure(rill_tensor_write(t, raw.data(), 11), RILL_ERROR_INVALID_ARGUMENT,
                 {"bytes", "expected 12", "f16", "[2, 3]", "got 11"});
  expect_failure(rill_tensor_read(nullptr, raw.data(), 12), RILL_ERROR_INVALID_ARGUMENT, {"rill_tensor_read"});
  expect_failure(rill_tensor_read(t, nullptr, 12), RILL_ERROR_INVALID_ARGUMENT, {"dst"});
  expect_failure(rill_tensor_read(t, raw.data(), 24), RILL_ERROR_INVALID_ARGUMENT, {"expected 12", "got 24"});
  expect_failure(rill_tensor_write_f32(nullptr, &f, 6), RILL_ERROR_INVALID_ARGUMENT, {"rill_tensor_write_f32"});
  expect_failure(rill_tensor_write_f32(t, nullptr, 6), RILL_ERROR_INVALID_ARGUMENT, {"src"});
  expect_failure(rill_tensor_write_f32(t, values.data(), 12), RILL_ERROR_INVALID_ARGUMENT, {"count", "expected 6", "got 12"});
  expect_failure(rill_tensor_read_f32(nullptr, &f, 6), RILL_ERROR_INVALID_ARGUMENT, {"rill_tensor_read_f32"});
  expect_failure(rill_tensor_read_f32(t, nullptr, 6), RILL_ERROR_INVALID_ARGUMENT, {"dst"});
  expect_failure(rill_tensor_read_f32(t, &f, 1), RILL_ERROR_INVALID_ARGUMENT, {"count", "got 1"});

  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    CAPTURE(std::string(rill_dtype_name(dtype)));
    rill_tensor* u = context.tensor({2, 3}, dtype);
    // Values exact in every dtype come back unchanged.
    const std::vector<float> exact = {1.0f, -2.0f, 0.5f, 96.0f, -0.0f, 3.0f};
    std::vector<float> back(6, kNaN);
    REQUIRE(rill_tensor_write_f32(u, exact.data(), exact.size()) == RILL_OK);
    REQUIRE(rill_tensor_read_f32(u, back.data(), back.size()) == RILL_OK);
    CHECK(std::memcmp(back.data(), exact.data(), sizeof(float) * 6) == 0);
    // Raw bytes round-trip too.
    std::vector<unsigned char> bytes(rill_tensor_nbytes(u)), again(rill_tensor_nbytes(u));
    REQUIRE(rill_tensor_read(u, bytes.data(), bytes.size()) == RILL_OK);
    REQUIRE(rill_tensor_write(u, bytes.data(), bytes.size()) == RILL_OK);
    REQUIRE(rill_tensor_read(u, again.data(), again.size()) == RILL_OK);
    CHECK(bytes == again);
    rill_tensor_destroy(u);
  }
  rill_tensor_destroy(t);
}

TEST_CASE("rill_residual_add: bad arguments") {
  Context context, other;
  rill_context* ctx = context.ctx;
  rill_tensor* r = context.tensor({2, 8});
  rill_tensor* u = context.tensor({2, 8});
  rill_tensor* g = context.tensor({8});
  rill_tensor* u_f16 = context.tensor({2, 8}, RILL_DTYPE_F16);
  rill_tensor* u_wide = context.tensor({2, 9});
  rill_tensor* g_short = context.tensor({7});
  rill_tensor* foreign = other.tensor({2, 8});
  const char* fn = "rill_residual_add";
  expect_failure(rill_residual_add(nullptr, r, u, g, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {fn, "ctx"});
  expect_failure(rill_residual_add(ctx, nullptr, u, g, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {fn, "residual", "NULL"});
  expect_failure(rill_residual_add(ctx, r, nullptr, g, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {"update", "NULL"});
  expect_failure(rill_residual_add(ctx, r, foreign, g, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {"update", "another context"});
  expect_failure(rill_residual_add(ctx, r, u_f16, g, 1, 1), RILL_ERROR_DTYPE, {"update", "expected dtype f32", "got f16"});
  expect_failure(rill_residual_add(ctx, r, u_wide, g, 1, 1), RILL_ERROR_SHAPE, {"update", "[2, 8]", "got [2, 9]"});
  expect_failure(rill_residual_add(ctx, r, u, g_short, 1, 1), RILL_ERROR_SHAPE, {"gain", "[8]", "got [7]"});
  expect_failure(rill_residual_add(ctx, r, u, u, 1, 1), RILL_ERROR_SHAPE, {"gain", "got [2, 8]"});
  expect_failure(rill_residual_add(ctx, r, r, g, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {"update", "same tensor", "residual"});
  expect_failure(rill_residual_add(ctx, r, u, g, kNaN, 1), RILL_ERROR_INVALID_ARGUMENT, {"residual_scale", "finite"});
  expect_failure(rill_residual_add(ctx, r, u, g, 1, kInf), RILL_ERROR_INVALID_ARGUMENT, {"update_scale", "finite"});
  // A failed call leaves the residual as it was.
  const std::vector<float> ones(16, 1.0f);
  std::vector<float> back(16);
  REQUIRE(rill_tensor_write_f32(r, ones.data(), 16) == RILL_OK);
  REQUIRE(rill_residual_add(ctx, r, u, g_short, 1, 1) == RILL_ERROR_SHAPE);
  REQUIRE(rill_tensor_read_f32(r, back.data(), 16) == RILL_OK);
  CHECK(back == ones);
  for (rill_tensor* t : {r, u, g, u_f16, u_wide, g_short}) rill_tensor_destroy(t);
  rill_tensor_destroy(foreign);
}

TEST_CASE("rill_rms_norm and rill_layer_norm: bad arguments") {
  Context context, other;
  rill_context* ctx = context.ctx;
  rill_tensor* x = context.tensor({3, 16});
  rill_tensor* out = context.tensor({3, 16});
  rill_tensor* w = context.tensor({16});
  rill_tensor* b = context.tensor({16});
  rill_tensor* w_bad = context.tensor({15});
  rill_tensor* out_bad = context.tensor({16, 3});
  rill_tensor* x_bf16 = context.tensor({3, 16}, RILL_DTYPE_BF16);
  rill_tensor* foreign = other.tensor({16});
  const char* rms = "rill_rms_norm";
  expect_failure(rill_rms_norm(nullptr, x, w, 1e-6f, out), RILL_ERROR_INVALID_ARGUMENT, {rms, "ctx"});
  expect_failure(rill_rms_norm(ctx, nullptr, w, 1e-6f, out), RILL_ERROR_INVALID_ARGUMENT, {rms, "x"});
  expect_failure(rill_rms_norm(ctx, x, w, 1e-6f, nullptr), RILL_ERROR_INVALID_ARGUMENT, {rms, "out"});
  expect_failure(rill_rms_norm(ctx, x, foreign, 1e-6f, out), RILL_ERROR_INVALID_ARGUMENT, {"weight", "another context"});
  expect_failure(rill_rms_norm(ctx, x_bf16, w, 1e-6f, out), RILL_ERROR_DTYPE, {"weight", "bf16", "got f32"});
  expect_failure(rill_rms_norm(ctx, x, w_bad, 1e-6f, out), RILL_ERROR_SHAPE,
                 {"rill_rms_norm: weight: expected shape [16] (the last dim of x), got [15]"});
  expect_failure(rill_rms_norm(ctx, x, w, 1e-6f, out_bad), RILL_ERROR_SHAPE, {"out", "[3, 16]", "got [16, 3]"});
  expect_failure(rill_rms_norm(ctx, x, w, -1e-6f, out), RILL_ERROR_INVALID_ARGUMENT, {"eps", ">= 0"});
  expect_failure(rill_rms_norm(ctx, x, w, kNaN, out), RILL_ERROR_INVALID_ARGUMENT, {"eps"});
  // out may alias x.
  CHECK(rill_rms_norm(ctx, x, w, 1e-6f, x) == RILL_OK);
  const char* ln = "rill_layer_norm";
  expect_failure(rill_layer_norm(nullptr, x, w, b, 1e-5f, out), RILL_ERROR_INVALID_ARGUMENT, {ln, "ctx"});
  expect_failure(rill_layer_norm(ctx, x, w, w_bad, 1e-5f, out), RILL_ERROR_SHAPE, {ln, "bias", "got [15]"});
  expect_failure(rill_layer_norm(ctx, x, w, foreign, 1e-5f, out), RILL_ERROR_INVALID_ARGUMENT, {"bias", "another context"});
  expect_failure(rill_layer_norm(ctx, x_bf16, nullptr, nullptr, 1e-5f, out), RILL_ERROR_DTYPE, {"out", "got f32"});
  expect_failure(rill_layer_norm(ctx, x, w, b, kInf, out), RILL_ERROR_INVALID_ARGUMENT, {ln, "eps"});
  CHECK(rill_layer_norm(ctx, x, w, b, 1e-5f, x) == RILL_OK);
  for (rill_tensor* t : {x, out, w, b, w_bad, out_bad, x_bf16}) rill_tensor_destroy(t);
  rill_tensor_destroy(foreign);
}

TEST_CASE("fused add+norm: bad arguments") {
  Context context, other;
  rill_context* ctx = context.ctx;
  rill_tensor* x = context.tensor({2, 4, 8}, RILL_DTYPE_F16);
  rill_tensor* r = context.tensor({2, 4, 8}, RILL_DTYPE_F16);
  rill_tensor* w = context.tensor({8}, RILL_DTYPE_F16);
  rill_tensor* w_f32 = context.tensor({8});
  rill_tensor* r_bad = context.tensor({2, 8, 4}, RILL_DTYPE_F16);
  rill_tensor* foreign = other.tensor({2, 4, 8}, RILL_DTYPE_F16);
  const char* fn = "rill_fused_add_rms_norm";
  expect_failure(rill_fused_add_rms_norm(nullptr, x, r, w, w, 1e-6f, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {fn, "ctx"});
  expect_failure(rill_fused_add_rms_norm(ctx, nullptr, r, w, w, 1e-6f, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {fn, "x"});
  expect_failure(rill_fused_add_rms_norm(ctx, x, nullptr, w, w, 1e-6f, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {"residual"});
  expect_failure(rill_fused_add_rms_norm(ctx, x, foreign, w, w, 1e-6f, 1, 1), RILL_ERROR_INVALID_ARGUMENT,
                 {"residual", "another context"});
  expect_failure(rill_fused_add_rms_norm(ctx, x, r, w_f32, w, 1e-6f, 1, 1), RILL_ERROR_DTYPE, {"gain", "f16", "got f32"});
  expect_failure(rill_fused_add_rms_norm(ctx, x, r_bad, w, w, 1e-6f, 1, 1), RILL_ERROR_SHAPE,
                 {"residual", "[2, 4, 8]", "got [2, 8, 4]"});
  expect_failure(rill_fused_add_rms_norm(ctx, x, x, w, w, 1e-6f, 1, 1), RILL_ERROR_INVALID_ARGUMENT,
                 {"x", "same tensor", "residual"});
  expect_failure(rill_fused_add_rms_norm(ctx, x, r, w, w, -1, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {"eps"});
  expect_failure(rill_fused_add_rms_norm(ctx, x, r, w, w, 1e-6f, kInf, 1), RILL_ERROR_INVALID_ARGUMENT, {"residual_scale"});
  expect_failure(rill_fused_add_rms_norm(ctx, x, r, w, w, 1e-6f, 1, kNaN), RILL_ERROR_INVALID_ARGUMENT, {"update_scale"});
  const char* ln = "rill_fused_add_layer_norm";
  expect_failure(rill_fused_add_layer_norm(nullptr, x, r, w, w, w, 1e-5f, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {ln, "ctx"});
  expect_failure(rill_fused_add_layer_norm(ctx, x, r, w, w, w_f32, 1e-5f, 1, 1), RILL_ERROR_DTYPE, {ln, "bias"});
  expect_failure(rill_fused_add_layer_norm(ctx, x, r, nullptr, nullptr, r, 1e-5f, 1, 1), RILL_ERROR_SHAPE,
                 {ln, "bias", "[8]", "got [2, 4, 8]"});
  expect_failure(rill_fused_add_layer_norm(ctx, r, r, w, w, w, 1e-5f, 1, 1), RILL_ERROR_INVALID_ARGUMENT, {ln, "same tensor"});
  CHECK(rill_fused_add_rms_norm(ctx, x, r, w, w, 1e-6f, 1, 1) == RILL_OK);
  CHECK(rill_fused_add_layer_norm(ctx, x, r, nullptr, w, nullptr, 1e-5f, 0.5f, 2) == RILL_OK);
  for (rill_tensor* t : {x, r, w, w_f32, r_bad}) rill_tensor_destroy(t);
  rill_tensor_destroy(foreign);
}

TEST_CASE("fused add+norm: a [D] operand that is also written is refused") {
  Context context;
  rill_tensor* x = context.tensor({8});
  rill_tensor* r = context.tensor({8});
  expect_failure(rill_fused_add_rms_norm(context.ctx, x, r, nullptr, x, 1e-6f, 1, 1), RILL_ERROR_INVALID_ARGUMENT,
                 {"weight", "same tensor", "x"});
  expect_failure(rill_fused_add_rms_norm(context.ctx, x, r, r, nullptr, 1e-6f, 1, 1), RILL_ERROR_INVALID_ARGUMENT,
                 {"gain", "same tensor", "residual"});
  rill_tensor_destroy(x);
  rill_tensor_destroy(r);
}

TEST_CASE("rill_gemm: bad arguments") {
  Context context, other;
  rill_context* ctx = context.ctx;
  rill_tensor* a = context.tensor({2, 3, 16});
  rill_tensor* w = context.tensor({8, 16});
  rill_tensor* bias = context.tensor({8});
  rill_tensor* out = context.tensor({2, 3, 8});
  rill_tensor* w_k = context.tensor({8, 15});
  rill_tensor* w_3d = context.tensor({1, 8, 16});
  rill_tensor* bias_bad = context.tensor({16});
  rill_tensor* out_bad = context.tensor({6, 8});
  rill_tensor* out_f16 = context.tensor({2, 3, 8}, RILL_DTYPE_F16);
  rill_tensor* square_a = context.tensor({16, 16});
  rill_tensor* square_w = context.tensor({16, 16});
  rill_tensor* foreign = other.tensor({8, 16});
  const char* fn = "rill_gemm";
  expect_failure(rill_gemm(nullptr, a, w, bias, 1, 0, out), RILL_ERROR_INVALID_ARGUMENT, {fn, "ctx"});
  expect_failure(rill_gemm(ctx, nullptr, w, bias, 1, 0, out), RILL_ERROR_INVALID_ARGUMENT, {fn, "a"});
  expect_failure(rill_gemm(ctx, a, nullptr, bias, 1, 0, out), RILL_ERROR_INVALID_ARGUMENT, {fn, "w"});
  expect_failure(rill_gemm(ctx, a, w, bias, 1, 0, nullptr), RILL_ERROR_INVALID_ARGUMENT, {fn, "out"});
  expect_failure(rill_gemm(ctx, a, foreign, bias, 1, 0, out), RILL_ERROR_INVALID_ARGUMENT, {"w", "another context"});
  expect_failure(rill_gemm(ctx, a, w, bias, 1, 0, out_f16), RILL_ERROR_DTYPE, {"out", "expected dtype f32", "got f16"});
  expect_failure(rill_gemm(ctx, a, w_k, bias, 1, 0, out), RILL_ERROR_SHAPE, {"w", "[N, 16]", "got [8, 15]"});
  expect_failure(rill_gemm(ctx, a, w_3d, bias, 1, 0, out), RILL_ERROR_SHAPE, {"w", "got [1, 8, 16]"});
  expect_failure(rill_gemm(ctx, a, w, bias_bad, 1, 0, out), RILL_ERROR_SHAPE, {"bias", "[8]", "got [16]"});
  expect_failure(rill_gemm(ctx, a, w, bias, 1, 0, out_bad), RILL_ERROR_SHAPE, {"out", "[2, 3, 8]", "got [6, 8]"});
  expect_failure(rill_gemm(ctx, square_a, square_w, nullptr, 1, 0, square_a), RILL_ERROR_INVALID_ARGUMENT,
                 {"out", "same tensor", "a"});
  expect_failure(rill_gemm(ctx, square_a, square_w, nullptr, 1, 0, square_w), RILL_ERROR_INVALID_ARGUMENT,
                 {"out", "same tensor", "w"});
  expect_failure(rill_gemm(ctx, a, w, bias, kNaN, 0, out), RILL_ERROR_INVALID_ARGUMENT, {"alpha", "finite"});
  expect_failure(rill_gemm(ctx, a, w, bias, 1, -kInf, out), RILL_ERROR_INVALID_ARGUMENT, {"beta", "finite"});
  CHECK(rill_gemm(ctx, a, w, bias, 1, 0, out) == RILL_OK);
  for (rill_tensor* t : {a, w, bias, out, w_k, w_3d, bias_bad, out_bad, out_f16, square_a, square_w}) rill_tensor_destroy(t);
  rill_tensor_destroy(foreign);
}

TEST_CASE("rill_info_report: bad arguments, sizing, and content") {
  size_t required = 0;
  char small[8];
  std::memset(small, 'x', sizeof(small));
  expect_failure(rill_info_report(nullptr, nullptr, 0, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"out_required"});
  expect_failure(rill_info_report(nullptr, nullptr, 16, &required), RILL_ERROR_INVALID_ARGUMENT, {"buf", "NULL"});
  expect_failure(rill_info_report("bogus = 1", nullptr, 0, &required), RILL_ERROR_CONFIG, {"bogus", "1:1"});
  CHECK(required == 0);
  REQUIRE(rill_info_report(nullptr, nullptr, 0, &required) == RILL_OK);
  REQUIRE(required > sizeof(small));
  size_t unchanged = 7;
  expect_failure(rill_info_report(nullptr, small, sizeof(small), &unchanged), RILL_ERROR_INVALID_ARGUMENT,
                 {"buf_size", "got 8"});
  CHECK(unchanged == 7);
  for (char c : small) CHECK(c == 'x');  // never truncated into a short buffer
  std::vector<char> report(required + 64);
  size_t written = 0;
  REQUIRE(rill_info_report("", report.data(), report.size(), &written) == RILL_OK);
  const std::string text = report.data();
  CHECK(written == text.size() + 1);
  const unsigned v = rill_version_number();
  const std::string version =
      "rill " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  CHECK(text.rfind(version, 0) == 0);
  CHECK(text.find("cpu: available") != std::string::npos);
  CHECK(text.find("  cuda: ") != std::string::npos);
  CHECK(text.find("  vulkan: ") != std::string::npos);
}

namespace {
// Runs body with the process's stderr sent to a file; returns what was written.
template <class Body>
std::string capture_stderr(Body body) {
  std::string path = (std::filesystem::temp_directory_path() / "rill_api_test_stderr_XXXXXX").string();
  const int file = mkstemp(path.data());
  REQUIRE(file >= 0);
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(file, 2);
  body();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(file);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  return text.str();
}
}  // namespace

TEST_CASE("default log sink: silent without RILL_LOG, stderr at the level RILL_LOG names") {
  REQUIRE(unsetenv("RILL_LOG") == 0);
  CHECK(capture_stderr([] { Context context; }).empty());
  REQUIRE(setenv("RILL_LOG", "info", 1) == 0);
  const std::string info = capture_stderr([] { Context context; });
  CHECK_MESSAGE(info.find("cpu: chosen") != std::string::npos, info);
  REQUIRE(setenv("RILL_LOG", "error", 1) == 0);
  CHECK(capture_stderr([] { Context context; }).empty());
  REQUIRE(unsetenv("RILL_LOG") == 0);
}
