/* gemm on the device's matrix units: shaders/gemm_coopmat.comp, its matrix
   shape (specialization constants) chosen from the device's reports when the
   device was opened (vk_coopmat.h). */
#include "vk_internal.h"

namespace rill_vk {

rill_status gemm_coopmat(rill_backend_context* ctx, const BoundRange* ranges, const GemmParams& params) {
  const CoopmatTile tile = ctx->coopmat_tile;
  const uint64_t block_m = uint64_t{kCoopmatBlockTiles} * tile.m;
  /* Constants 0-3: MMA_M, MMA_N, MMA_K, SUBGROUP_SIZE (its local_size_x). */
  return record_dispatch_specialized(ctx, "gemm_coopmat_f16", {tile.m, tile.n, tile.k, ctx->caps.subgroup_size},
                                     ranges, &params, sizeof params,
                                     static_cast<uint32_t>(coopmat_column_groups(tile, params.n)),
                                     groups_for(ctx, params.rows, block_m));
}

}  // namespace rill_vk
