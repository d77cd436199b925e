// The Vulkan plugin's choice of GEMM tile and split-K for a shape and a
// device's limits (backends/vulkan/vk_gemm_plan.h), with no device: the
// thresholds between tiles, the limits that rule a tile out, and split-K's
// runs. Expected values are worked out by hand from the rules in the header.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "vk_gemm_plan.h"

using rill_vk::GemmDeviceLimits;
using rill_vk::GemmPlan;
using rill_vk::plan_gemm;

namespace {

// A large desktop GPU's limits: every tile fits.
GemmDeviceLimits roomy() {
  GemmDeviceLimits limits;
  limits.max_invocations = 1024;
  limits.max_size_x = 1024;
  limits.max_size_y = 1024;
  limits.max_shared_bytes = 48 * 1024;
  return limits;
}

std::string tile_of(const GemmPlan& plan) { return plan.tile->name; }

}  // namespace

TEST_CASE("gemm tiles: small up to 32 rows, large only where it still fills the GPU, medium between") {
  const GemmDeviceLimits limits = roomy();
  CHECK(tile_of(plan_gemm(9, 4096, 64, 2, true, limits)) == "s");
  CHECK(tile_of(plan_gemm(32, 4096, 64, 2, true, limits)) == "s");
  CHECK(tile_of(plan_gemm(33, 4096, 64, 2, true, limits)) == "m");
  // 16 x 16 = 256 tiles of 128 x 128: large. One column of tiles fewer (240): medium.
  CHECK(tile_of(plan_gemm(2048, 2048, 64, 4, false, limits)) == "l");
  CHECK(tile_of(plan_gemm(2048, 1920, 64, 4, false, limits)) == "m");
  CHECK(tile_of(plan_gemm(1920, 2048, 64, 4, false, limits)) == "m");
  // Narrow N: 32769 large tiles, each all but 2 of its 128 columns empty.
  CHECK(tile_of(plan_gemm(65535 * 64 + 70, 2, 1, 2, false, limits)) == "m");
  // 17 x 17 tiles, neither M nor N a multiple of 128.
  const GemmPlan large = plan_gemm(2051, 2053, 36, 2, true, limits);
  CHECK(tile_of(large) == "l");
  CHECK(large.row_tiles == 17);
  CHECK(large.column_tiles == 17);
  CHECK(large.splits == 1);
  CHECK(large.vec4);
  CHECK_FALSE(plan_gemm(2051, 2053, 35, 2, false, limits).vec4);
}

TEST_CASE("gemm tiles: a tile the device's limits cannot hold gives way to a smaller one") {
  // Shared memory: the large tile takes 8 x (129 + 129) pairs, 16512 bytes
  // as f32 (a vec2 per pair), 8256 as 16-bit (a uint per pair).
  CHECK(rill_vk::gemm_tile_shared_bytes(rill_vk::kGemmTileLarge, 4) == 16512);
  CHECK(rill_vk::gemm_tile_shared_bytes(rill_vk::kGemmTileLarge, 2) == 8256);
  CHECK(rill_vk::gemm_tile_shared_bytes(rill_vk::kGemmTileMedium, 4) == 8320);
  CHECK(rill_vk::gemm_tile_invocations(rill_vk::kGemmTileLarge) == 256);
  CHECK(rill_vk::gemm_tile_invocations(rill_vk::kGemmTileSmall) == 128);
  GemmDeviceLimits limits = roomy();
  limits.max_shared_bytes = 16384;  // the least Vulkan guarantees
  CHECK(tile_of(plan_gemm(2048, 2048, 64, 4, false, limits)) == "m");
  CHECK(tile_of(plan_gemm(2048, 2048, 64, 2, false, limits)) == "l");
  // 128 invocations (the least Vulkan guarantees): only the small tile.
  limits = roomy();
  limits.max_invocations = 128;
  CHECK(tile_of(plan_gemm(2048, 2048, 64, 2, false, limits)) == "s");
  CHECK(tile_of(plan_gemm(100, 100, 64, 2, false, limits)) == "s");
  // A workgroup 16 wide but not 16 high (the medium and large tiles' shape).
  limits = roomy();
  limits.max_size_y = 8;
  CHECK(tile_of(plan_gemm(2048, 2048, 64, 2, false, limits)) == "s");
}

TEST_CASE("gemm split-K: few tiles split k into whole steps of 16, at least 256 long") {
  const GemmDeviceLimits limits = roomy();
  // 2 medium tiles want 128 runs; K = 1000 allows 3: runs of 336, 336, 328.
  GemmPlan plan = plan_gemm(65, 64, 1000, 4, false, limits);
  CHECK(tile_of(plan) == "m");
  CHECK(plan.splits == 3);
  CHECK(plan.k_chunk == 336);
  // 1 small tile, K = 600: 2 runs of 304 and 296.
  plan = plan_gemm(20, 64, 600, 2, true, limits);
  CHECK(tile_of(plan) == "s");
  CHECK(plan.splits == 2);
  CHECK(plan.k_chunk == 304);
  // K = 511 is too short for two runs of 256.
  CHECK(plan_gemm(20, 64, 511, 2, true, limits).splits == 1);
  // 64 small tiles want 4 runs; K = 4096 allows them: runs of 1024.
  plan = plan_gemm(16, 4096, 4096, 2, true, limits);
  CHECK(plan.splits == 4);
  CHECK(plan.k_chunk == 1024);
  // 256 tiles fill the GPU: no split.
  CHECK(plan_gemm(1024, 1024, 4096, 2, true, limits).splits == 1);
}
