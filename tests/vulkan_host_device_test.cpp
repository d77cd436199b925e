// rill_context_create_on_vulkan_device: the test makes a Vulkan instance and
// device itself, as an engine would, and hands them to rill. rill must run
// its ops there (a GEMM against the double reference, a get_rows from a Q4_K
// table against the runtime's dequantization), must not destroy the host's
// device (the host uses it after rill_context_destroy, and destroys it
// itself), and must refuse bad handles, struct sizes, queue families and
// configs by name. No Vulkan device: reported skipped (exit code 77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <vulkan/vulkan.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "reference.h"
#include "rill.h"
#include "test_helpers.h"
#include "tolerance.h"
#include "vulkan_host_device.h"

namespace {

using rill_test::expect_failure;

rill_test::HostDevice* g_host = nullptr;

std::vector<float> uniform(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

rill_tensor* filled(rill_context* ctx, rill_dtype dtype, std::vector<int64_t> shape, const std::vector<float>& values) {
  rill_tensor* t = nullptr;
  REQUIRE_MESSAGE(rill_tensor_create(ctx, dtype, static_cast<int32_t>(shape.size()), shape.data(), &t) == RILL_OK,
                  rill_last_error());
  REQUIRE_MESSAGE(rill_tensor_write_f32(t, values.data(), values.size()) == RILL_OK, rill_last_error());
  return t;
}

std::vector<float> read(const rill_tensor* t) {
  std::vector<float> v(rill_tensor_numel(t));
  REQUIRE_MESSAGE(rill_tensor_read_f32(t, v.data(), v.size()) == RILL_OK, rill_last_error());
  return v;
}

}  // namespace

TEST_CASE("rill runs on the host's device and leaves it to the host") {
  const rill_vulkan_device handles = g_host->handles();
  for (int round = 0; round < 2; ++round) {  // a second context on the same device after the first is gone
    rill_context* ctx = nullptr;
    REQUIRE_MESSAGE(rill_context_create_on_vulkan_device("[runtime]\nbackend = \"vulkan\"\n", &handles, &ctx) == RILL_OK,
                    rill_last_error());
    CHECK(std::string(rill_context_backend_name(ctx)) == "vulkan");
    CHECK(std::string(rill_context_device_name(ctx)) == g_host->name);

    const int64_t rows = 3, n = 16, k = 256;
    const std::vector<float> a = uniform(size_t(rows * k), 1), w = uniform(size_t(n * k), 2);
    rill_tensor* ta = filled(ctx, RILL_DTYPE_F32, {rows, k}, a);
    rill_tensor* tw = filled(ctx, RILL_DTYPE_F32, {n, k}, w);
    rill_tensor* out = filled(ctx, RILL_DTYPE_F32, {rows, n}, std::vector<float>(size_t(rows * n), 0.0f));
    REQUIRE_MESSAGE(rill_gemm(ctx, ta, tw, nullptr, 1.0f, 0.0f, out) == RILL_OK, rill_last_error());
    const rill_tol::Score s = rill_tol::score(read(out), rill_ref::gemm(a, w, {}, 1.0f, 0.0f, {}, rows, n, k));
    CHECK_MESSAGE(rill_tol::within(s, RILL_DTYPE_F32), rill_tol::describe(s, RILL_DTYPE_F32));

    rill_tensor* table = filled(ctx, RILL_DTYPE_Q4_K, {4, k}, uniform(size_t(4 * k), 3));
    rill_tensor* row = filled(ctx, RILL_DTYPE_F32, {1, k}, std::vector<float>(size_t(k), 0.0f));
    const int32_t id = 2;
    REQUIRE_MESSAGE(rill_get_rows(ctx, table, &id, 1, row) == RILL_OK, rill_last_error());
    const std::vector<float> all = read(table), got = read(row);
    CHECK(std::vector<float>(all.begin() + 2 * k, all.begin() + 3 * k) == got);
    REQUIRE(rill_context_synchronize(ctx) == RILL_OK);
    rill_context_destroy(ctx);

    g_host->check_usable();  // the device and its queue are still the host's to use
  }
}

TEST_CASE("rill_context_create_on_vulkan_device refuses bad arguments by name") {
  const rill_vulkan_device good = g_host->handles();
  rill_context* ctx = nullptr;
  expect_failure(rill_context_create_on_vulkan_device(nullptr, nullptr, &ctx), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_context_create_on_vulkan_device", "device:", "NULL"});
  expect_failure(rill_context_create_on_vulkan_device(nullptr, &good, nullptr), RILL_ERROR_INVALID_ARGUMENT,
                 {"out_ctx:", "NULL"});
  rill_vulkan_device small = good;
  small.struct_size = 8;
  expect_failure(rill_context_create_on_vulkan_device(nullptr, &small, &ctx), RILL_ERROR_INVALID_ARGUMENT,
                 {"device->struct_size", std::to_string(sizeof(rill_vulkan_device)), "got 8"});
  rill_vulkan_device no_queue = good;
  no_queue.queue = nullptr;
  expect_failure(rill_context_create_on_vulkan_device(nullptr, &no_queue, &ctx), RILL_ERROR_INVALID_ARGUMENT,
                 {"device->queue:", "NULL"});
  rill_vulkan_device bad_family = good;
  bad_family.queue_family = 99;
  expect_failure(rill_context_create_on_vulkan_device(nullptr, &bad_family, &ctx), RILL_ERROR_BACKEND_UNAVAILABLE,
                 {"queue_family", "compute", "got 99"});
  expect_failure(rill_context_create_on_vulkan_device("[runtime]\nbackend = \"cpu\"\n", &good, &ctx),
                 RILL_ERROR_CONFIG, {"runtime.backend", "\"vulkan\" or \"auto\"", "cpu"});
  expect_failure(rill_context_create_on_vulkan_device("[runtime\n", &good, &ctx), RILL_ERROR_CONFIG, {"config"});
  CHECK(ctx == nullptr);
}

int main(int argc, char** argv) {
  rill_test::HostDevice host;
  if (!host.skip_reason.empty()) {
    std::printf("SKIPPED: vulkan host device: %s\n", host.skip_reason.c_str());
    return 77;
  }
  g_host = &host;
  std::printf("host device: %s\n", host.name.c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
