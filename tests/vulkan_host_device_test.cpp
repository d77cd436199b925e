// rill_context_create_on_vulkan_device: the test makes a Vulkan instance and
// device itself, as an engine would, and hands them to rill. rill must run
// its ops there (a GEMM against the double reference, a get_rows from a Q4_K
// table against the runtime's dequantization), must not destroy the host's
// device (the host uses it after rill_context_destroy, and destroys it
// itself), and must refuse bad handles, struct sizes, queue families and
// configs by name. With a timeline semaphore of the host's, rill's work must
// wait for the host's value (signalled from another thread after a delay) and
// signal its own, which the host waits for; the same run without the wait is
// the control that shows the check catches work that does not wait. No
// Vulkan device: reported skipped (exit code 77); a device without timeline
// semaphores: those cases are left out and the test reports skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <vulkan/vulkan.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
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

// A VkSemaphore as rill.h takes it.
uint64_t handle(VkSemaphore semaphore) { return reinterpret_cast<uint64_t>(semaphore); }

rill_context* context_on_host_device() {
  const rill_vulkan_device handles = g_host->handles();
  rill_context* ctx = nullptr;
  REQUIRE_MESSAGE(rill_context_create_on_vulkan_device(nullptr, &handles, &ctx) == RILL_OK, rill_last_error());
  return ctx;
}

// Queues a GEMM on the host's device, with rill's work waiting for the
// host's value 1 when wait is set, and rill signalling 2 after it. Another
// thread, as the host, signals after a delay: 1, or 3 without the wait (a
// timeline value must go up, and rill's 2 comes first then). Returns whether
// the host had signalled when rill's 2 arrived; checks the GEMM's result.
bool rill_value_came_after_host_signal(bool wait) {
  VkSemaphore semaphore = g_host->make_timeline_semaphore(0);
  rill_context* ctx = context_on_host_device();
  const int64_t rows = 2, n = 8, k = 64;
  const std::vector<float> a = uniform(size_t(rows * k), 4), w = uniform(size_t(n * k), 5);
  rill_tensor* ta = filled(ctx, RILL_DTYPE_F32, {rows, k}, a);
  rill_tensor* tw = filled(ctx, RILL_DTYPE_F32, {n, k}, w);
  rill_tensor* out = filled(ctx, RILL_DTYPE_F32, {rows, n}, std::vector<float>(size_t(rows * n), 0.0f));
  if (wait) REQUIRE_MESSAGE(rill_context_vulkan_wait(ctx, handle(semaphore), 1) == RILL_OK, rill_last_error());
  REQUIRE_MESSAGE(rill_gemm(ctx, ta, tw, nullptr, 1.0f, 0.0f, out) == RILL_OK, rill_last_error());
  REQUIRE_MESSAGE(rill_context_vulkan_signal(ctx, handle(semaphore), 2) == RILL_OK, rill_last_error());

  std::atomic<bool> host_signalled{false};
  std::thread host([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    host_signalled = true;  // before the signal: rill's 2 may follow at once
    VkSemaphoreSignalInfo signal{};
    signal.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
    signal.semaphore = semaphore;
    signal.value = wait ? 1 : 3;
    CHECK(vkSignalSemaphore(g_host->device, &signal) == VK_SUCCESS);
  });
  VkSemaphoreWaitInfo until{};
  until.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
  until.semaphoreCount = 1;
  until.pSemaphores = &semaphore;
  const uint64_t rill_value = 2;
  until.pValues = &rill_value;
  const VkResult waited = vkWaitSemaphores(g_host->device, &until, 10'000'000'000ull);
  const bool after = host_signalled;
  host.join();
  CHECK(waited == VK_SUCCESS);
  const rill_tol::Score s = rill_tol::score(read(out), rill_ref::gemm(a, w, {}, 1.0f, 0.0f, {}, rows, n, k));
  CHECK_MESSAGE(rill_tol::within(s, RILL_DTYPE_F32), rill_tol::describe(s, RILL_DTYPE_F32));
  rill_context_destroy(ctx);
  vkDestroySemaphore(g_host->device, semaphore, nullptr);
  return after;
}

}  // namespace

TEST_CASE("timeline: rill's work waits for the host's value and signals its own") {
  CHECK(rill_value_came_after_host_signal(true));
}

TEST_CASE("timeline: without the wait, rill's work runs before the host signals (the control)") {
  CHECK_FALSE(rill_value_came_after_host_signal(false));
}

TEST_CASE("timeline: bad arguments are refused by name") {
  VkSemaphore semaphore = g_host->make_timeline_semaphore(10);
  rill_context* ctx = context_on_host_device();
  expect_failure(rill_context_vulkan_wait(nullptr, handle(semaphore), 1), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_context_vulkan_wait", "ctx:", "NULL"});
  expect_failure(rill_context_vulkan_signal(ctx, 0, 11), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_context_vulkan_signal", "semaphore:", "got 0"});
  expect_failure(rill_context_vulkan_signal(ctx, handle(semaphore), 7), RILL_ERROR_INVALID_ARGUMENT,
                 {"value:", "more than 10", "got 7"});
  REQUIRE_MESSAGE(rill_context_vulkan_signal(ctx, handle(semaphore), 12) == RILL_OK, rill_last_error());
  expect_failure(rill_context_vulkan_signal(ctx, handle(semaphore), 12), RILL_ERROR_INVALID_ARGUMENT,
                 {"value:", "more than 12", "got 12"});
  REQUIRE(rill_context_synchronize(ctx) == RILL_OK);
  rill_context_destroy(ctx);

  rill_context* cpu = nullptr;
  REQUIRE(rill_context_create("[runtime]\nbackend = \"cpu\"\n", &cpu) == RILL_OK);
  expect_failure(rill_context_vulkan_wait(cpu, handle(semaphore), 1), RILL_ERROR_UNSUPPORTED,
                 {"ctx:", "Vulkan backend", "cpu"});
  rill_context_destroy(cpu);
  rill_context* own = nullptr;
  // rill's own Vulkan device (where rill makes one: it may pass over a CPU
  // implementation such as lavapipe).
  if (rill_context_create("[runtime]\nbackend = \"vulkan\"\n", &own) == RILL_OK) {
    expect_failure(rill_context_vulkan_signal(own, handle(semaphore), 20), RILL_ERROR_INVALID_ARGUMENT,
                   {"ctx:", "rill_context_create_on_vulkan_device"});
    rill_context_destroy(own);
  }
  vkDestroySemaphore(g_host->device, semaphore, nullptr);
}

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

std::string g_warnings;  // the warnings logged, one a line

TEST_CASE("a queue_priority is ignored on the host's device, with a warning: the host set its queue's priority") {
  const rill_vulkan_device handles = g_host->handles();
  const rill_log_fn keep = [](rill_log_level, const char* message, void*) { g_warnings += std::string(message) + "\n"; };
  REQUIRE(rill_set_log_callback(keep, nullptr, RILL_LOG_WARNING) == RILL_OK);
  rill_context* ctx = nullptr;
  const rill_status status = rill_context_create_on_vulkan_device(
      "[runtime]\nbackend = \"vulkan\"\n[backend.vulkan]\nqueue_priority = 0.5\n", &handles, &ctx);
  rill_set_log_callback(nullptr, nullptr, RILL_LOG_WARNING);
  REQUIRE_MESSAGE(status == RILL_OK, rill_last_error());
  rill_context_destroy(ctx);
  rill_test::expect_message_has(g_warnings, {"'queue_priority' = 0.5 ignored", "host's VkDevice"});
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
  expect_failure(rill_context_create_on_vulkan_device(nullptr, &bad_family, &ctx), RILL_ERROR_INVALID_ARGUMENT,
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
  if (!host.timeline_semaphore) context.addFilter("test-case-exclude", "timeline:*");
  int failed = context.run();
  if (host.validation_messages > 0) {
    std::printf("FAILED: the validation layer reported %u message(s); the first: %s\n", host.validation_messages,
                host.first_validation_message.c_str());
    failed = 1;
  }
  if (failed == 0 && !host.timeline_semaphore) {
    std::printf("SKIPPED: the timeline cases: device \"%s\" lacks timelineSemaphore\n", host.name.c_str());
    return 77;
  }
  return failed;
}
