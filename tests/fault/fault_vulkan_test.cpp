// Fault injection over the Vulkan paths (docs/RELIABILITY.md), as fault_test
// walks the rest: a context made by rill itself, one made on a device the
// test makes as a host would (which must stay usable after every failed
// call), and a decoder layer's forward pass. Only rill's own allocations are
// failed (alloc_hook.h): the driver's are not rill's to recover from.
// Without a Vulkan device the test reports skipped (exit code 77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "fault_support.h"
#include "rill.h"
#include "test_helpers.h"
#include "vulkan_host_device.h"

namespace {

using rill_fault::TinyModel;
using rill_fault::walk_host;

const char* const kVulkanConfig = "[runtime]\nbackend = \"vulkan\"\n";

rill_test::HostDevice* g_host = nullptr;

}  // namespace

TEST_CASE("host allocation failures: Vulkan contexts") {
  rill_context* ctx = nullptr;
  walk_host("rill_context_create (vulkan)", [&] { return rill_context_create(kVulkanConfig, &ctx); },
            [&] { CHECK(ctx == nullptr); }, [&] { rill_context_destroy(ctx), ctx = nullptr; });
  REQUIRE(ctx != nullptr);
  CHECK(std::string(rill_context_backend_name(ctx)) == "vulkan");
  rill_context_destroy(ctx), ctx = nullptr;

  const rill_vulkan_device handles = g_host->handles();
  walk_host("rill_context_create_on_vulkan_device",
            [&] { return rill_context_create_on_vulkan_device(kVulkanConfig, &handles, &ctx); },
            [&] {
              CHECK(ctx == nullptr);
              g_host->check_usable();
            },
            [&] {
              rill_context_destroy(ctx), ctx = nullptr;
              g_host->check_usable();
            });
  // The context made after the failures runs on the host's device.
  REQUIRE(ctx != nullptr);
  CHECK(std::string(rill_context_device_name(ctx)) == g_host->name);
  const std::vector<float> values = {1.0f, -2.0f, 0.5f, 4.0f};
  rill_tensor* x = rill_test::create_tensor(ctx, {1, 4}, RILL_DTYPE_F32);
  rill_tensor* y = rill_test::create_tensor(ctx, {1, 4}, RILL_DTYPE_F32);
  REQUIRE(rill_tensor_write_f32(x, values.data(), values.size()) == RILL_OK);
  REQUIRE(rill_tensor_write_f32(y, values.data(), values.size()) == RILL_OK);
  REQUIRE_MESSAGE(rill_residual_add(ctx, x, y, nullptr, 1.0f, 1.0f) == RILL_OK, rill_last_error());
  std::vector<float> sum(4);
  REQUIRE(rill_tensor_read_f32(x, sum.data(), sum.size()) == RILL_OK);
  CHECK(sum == std::vector<float>{2.0f, -4.0f, 1.0f, 8.0f});
  rill_tensor_destroy(x);
  rill_tensor_destroy(y);
  rill_context_destroy(ctx);
  g_host->check_usable();
}

// Writes and reads go through the plugin's staging: a failed write leaves
// the tensor as it was, and a failed read leaves dst as it was.
TEST_CASE("host allocation failures: Vulkan tensor writes and reads") {
  rill_test::ScopedContext context(kVulkanConfig);
  rill_tensor* t = context.tensor({2, 4});
  const std::vector<float> first = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> second = {-1, -2, -3, -4, -5, -6, -7, -8};
  REQUIRE(rill_tensor_write(t, first.data(), first.size() * sizeof(float)) == RILL_OK);
  std::vector<float> got(8);
  const auto read_back = [&] {
    std::vector<float> values(8);
    REQUIRE(rill_tensor_read(t, values.data(), values.size() * sizeof(float)) == RILL_OK);
    return values;
  };
  walk_host("rill_tensor_write (vulkan)",
            [&] { return rill_tensor_write(t, second.data(), second.size() * sizeof(float)); },
            [&] { CHECK(read_back() == first); }, [] {});
  CHECK(read_back() == second);
  walk_host("rill_tensor_read (vulkan)", [&] { return rill_tensor_read(t, got.data(), got.size() * sizeof(float)); },
            [&] { CHECK(got == std::vector<float>(8, 0.0f)); }, [] {},
            [&] { got.assign(8, 0.0f); });
  CHECK(got == second);
  walk_host("rill_context_synchronize (vulkan)", [&] { return rill_context_synchronize(context.ctx); }, [] {}, [] {});
  rill_tensor_destroy(t);
}

TEST_CASE("host allocation failures: a forward pass on Vulkan keeps the cache as it was") {
  TinyModel tiny(kVulkanConfig);
  const std::string weights = rill_fault::write_tiny_checkpoint("vulkan.safetensors", 0.3f);
  REQUIRE(rill_model_load_safetensors(tiny.model, weights.c_str()) == RILL_OK);
  tiny.run();  // the pipelines are made on first use; the walk is about the pass
  rill_fault::walk_forward("rill_model_forward (vulkan)", tiny);
  std::remove(weights.c_str());
}

int main(int argc, char** argv) {
  rill_test::HostDevice host;
  if (!host.skip_reason.empty()) {
    std::printf("SKIPPED: fault walks on Vulkan: %s\n", host.skip_reason.c_str());
    return 77;
  }
  g_host = &host;
  doctest::Context context(argc, argv);
  return context.run();
}
