#include "vk_coopmat.h"

namespace rill_vk {

namespace {

bool power_of_two_in_range(uint32_t size) { return size >= 8 && size <= 32 && (size & (size - 1)) == 0; }

bool fits(CoopmatTile tile, const CoopmatLimits& limits) {
  const uint64_t invocations = uint64_t{limits.subgroup_size} * kCoopmatSubgroups;
  return limits.subgroup_size != 0 && limits.subgroup_size <= limits.max_workgroup_size_x &&
         invocations <= limits.max_invocations && coopmat_shared_bytes(tile) <= limits.max_shared_bytes;
}

/* Whether a is the better shape: more work per matrix op, then squarer. */
bool better(CoopmatTile a, CoopmatTile b) {
  const uint64_t volume_a = uint64_t{a.m} * a.n * a.k, volume_b = uint64_t{b.m} * b.n * b.k;
  if (volume_a != volume_b) return volume_a > volume_b;
  const uint32_t skew_a = a.m > a.n ? a.m - a.n : a.n - a.m, skew_b = b.m > b.n ? b.m - b.n : b.n - b.m;
  return skew_a < skew_b;
}

}  // namespace

uint32_t coopmat_shared_bytes(CoopmatTile tile) {
  const uint32_t stride = kCoopmatKSteps * tile.k + kCoopmatPad;
  const uint32_t staged = (kCoopmatBlockTiles * tile.m + kCoopmatBlockTiles * tile.n) * stride * 2;
  return staged + kCoopmatSubgroups * tile.m * tile.n * 4;
}

CoopmatTile choose_coopmat_tile(const std::vector<CooperativeMatrixProperties>& reports, const CoopmatLimits& limits) {
  CoopmatTile chosen;
  for (const CooperativeMatrixProperties& report : reports) {
    if (report.AType != kComponentFloat16 || report.BType != kComponentFloat16 || report.CType != kComponentFloat32 ||
        report.ResultType != kComponentFloat32 || report.saturatingAccumulation != VK_FALSE ||
        report.scope != kScopeSubgroup) {
      continue;
    }
    const CoopmatTile tile{report.MSize, report.NSize, report.KSize};
    if (!power_of_two_in_range(tile.m) || !power_of_two_in_range(tile.n) || !power_of_two_in_range(tile.k) ||
        !fits(tile, limits)) {
      continue;
    }
    if (!chosen.usable() || better(tile, chosen)) chosen = tile;
  }
  return chosen;
}

uint64_t coopmat_column_groups(CoopmatTile tile, uint64_t n) {
  const uint64_t block_n = uint64_t{kCoopmatBlockTiles} * tile.n;
  return (n + block_n - 1) / block_n;
}

bool coopmat_applies(CoopmatTile tile, rill_dtype dtype, uint64_t rows, uint64_t n, uint64_t rows_max,
                     uint64_t max_groups) {
  return tile.usable() && dtype == RILL_DTYPE_F16 && rows > rows_max && coopmat_column_groups(tile, n) <= max_groups;
}

}  // namespace rill_vk
