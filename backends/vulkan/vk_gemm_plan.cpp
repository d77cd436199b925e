/* The tiled GEMM's plan for a shape (vk_gemm_plan.h). */
#include "vk_gemm_plan.h"

#include <algorithm>

namespace rill_vk {

static_assert(kGemmTileLarge.n >= kGemmTileNMin && kGemmTileMedium.n >= kGemmTileNMin &&
                  kGemmTileSmall.n >= kGemmTileNMin,
              "check_gemm_n's bound on n holds for every tile");

namespace {

/* Rows of at most this many take the small tile. */
constexpr uint64_t kSmallTileRowsMax = 32;

uint64_t tiles_of(const GemmTile& tile, uint64_t m, uint64_t n) {
  return ((m + tile.m - 1) / tile.m) * ((n + tile.n - 1) / tile.n);
}

bool fits(const GemmTile& tile, uint32_t elem_bytes, const GemmDeviceLimits& limits) {
  return gemm_tile_invocations(tile) <= limits.max_invocations && tile.n / tile.thread_n <= limits.max_size_x &&
         tile.m / tile.thread_m <= limits.max_size_y &&
         gemm_tile_shared_bytes(tile, elem_bytes) <= limits.max_shared_bytes;
}

/* How many runs to split k into for a GEMM of tiles workgroups: enough to
   reach kGemmFillGroups, each run at least kGemmMinSplitK long. */
uint64_t splits_for(uint64_t tiles, uint64_t k) {
  if (tiles >= kGemmFillGroups) return 1;
  const uint64_t wanted = (kGemmFillGroups + tiles - 1) / tiles;
  return std::max<uint64_t>(1, std::min({wanted, kGemmMaxSplits, k / kGemmMinSplitK}));
}

}  // namespace

uint32_t gemm_tile_invocations(const GemmTile& tile) {
  return (tile.m / tile.thread_m) * (tile.n / tile.thread_n);
}

uint32_t gemm_tile_shared_bytes(const GemmTile& tile, uint32_t elem_bytes) {
  /* gemm.comp's a_tile and w_tile: kGemmTileK / 2 rows of pairs of k, each
     row padded by one pair; a pair is a vec2 (f32) or one uint (16-bit). */
  const uint32_t pair_bytes = elem_bytes == 4 ? 8 : 4;
  return (kGemmTileK / 2) * (tile.m + 1 + tile.n + 1) * pair_bytes;
}

GemmPlan plan_gemm(uint64_t m, uint64_t n, uint64_t k, uint32_t elem_bytes, bool rows_vec4,
                   const GemmDeviceLimits& limits) {
  GemmPlan plan;
  plan.vec4 = rows_vec4;
  if (m > kSmallTileRowsMax) {
    if (m >= kGemmTileLarge.m && n >= kGemmTileLarge.n && fits(kGemmTileLarge, elem_bytes, limits) &&
        tiles_of(kGemmTileLarge, m, n) >= kGemmFillGroups) {
      plan.tile = &kGemmTileLarge;
    } else if (fits(kGemmTileMedium, elem_bytes, limits)) {
      plan.tile = &kGemmTileMedium;
    }
  }
  if (plan.tile == nullptr) plan.tile = &kGemmTileSmall;
  plan.column_tiles = static_cast<uint32_t>((n + plan.tile->n - 1) / plan.tile->n);
  plan.row_tiles = static_cast<uint32_t>(std::min<uint64_t>((m + plan.tile->m - 1) / plan.tile->m, UINT32_MAX));
  /* Split runs are x groups: fewer than kGemmFillGroups tiles times
     kGemmMaxSplits runs stay within kMaxGroupsPerDispatch. */
  static_assert(kGemmFillGroups * kGemmMaxSplits <= kMaxGroupsPerDispatch, "split-K fits one grid row");
  const uint64_t splits = splits_for(tiles_of(*plan.tile, m, n), k);
  if (splits > 1) {
    const uint64_t k_chunk = ((k + splits - 1) / splits + kGemmTileK - 1) / kGemmTileK * kGemmTileK;
    plan.splits = static_cast<uint32_t>((k + k_chunk - 1) / k_chunk); /* rounding k_chunk up may leave fewer runs */
    plan.k_chunk = static_cast<uint32_t>(k_chunk);
  }
  return plan;
}

}  // namespace rill_vk
