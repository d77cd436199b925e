/* How the tiled GEMM (shaders/gemm.comp) runs a shape: which tile, whether
   rows are read as vectors of 4, and into how many runs k is split. A pure
   function of the shape and the device's limits, with no Vulkan calls, so
   that it is tested on its own (tests/vulkan_gemm_plan_test.cpp). */
#ifndef RILL_VK_GEMM_PLAN_H
#define RILL_VK_GEMM_PLAN_H

#include <cstdint>

namespace rill_vk {

/* One tile variant of gemm.comp (backends/vulkan/CMakeLists.txt builds each
   with these values): a workgroup of (n / thread_n) x (m / thread_m)
   invocations computes an m x n block of out, thread_m x thread_n outputs
   per invocation, staging TILE_K = kGemmTileK steps of k in shared memory. */
struct GemmTile {
  const char* name; /* the shader variants are gemm_<name>_<dtype>, gemm_split_<name>_<dtype> */
  uint32_t m, n, thread_m, thread_n;
};
constexpr uint32_t kGemmTileK = 16;
/* The same values as the tile list in backends/vulkan/CMakeLists.txt. */
inline constexpr GemmTile kGemmTileLarge = {"l", 128, 128, 8, 8}; /* both M and N large */
inline constexpr GemmTile kGemmTileMedium = {"m", 64, 64, 4, 4};
/* Few rows (9 to 32); 128 invocations, which every device allows. */
inline constexpr GemmTile kGemmTileSmall = {"s", 32, 64, 4, 4};
/* Every tile is at least this wide, so n up to kMaxGroupsPerDispatch times
   it fits one grid row of any tile (check_gemm_n). */
constexpr uint32_t kGemmTileNMin = 64;

/* Invocations per workgroup and bytes of shared memory the tile takes for
   elements of elem_bytes (16-bit inputs are staged as 16 bits). */
uint32_t gemm_tile_invocations(const GemmTile& tile);
uint32_t gemm_tile_shared_bytes(const GemmTile& tile, uint32_t elem_bytes);

/* What the choice reads of the device (VkPhysicalDeviceLimits). */
struct GemmDeviceLimits {
  uint32_t max_invocations = 128;    /* maxComputeWorkGroupInvocations */
  uint32_t max_size_x = 128;         /* maxComputeWorkGroupSize[0] */
  uint32_t max_size_y = 128;         /* maxComputeWorkGroupSize[1] */
  uint32_t max_shared_bytes = 16384; /* maxComputeSharedMemorySize */
};

/* Which kernel runs the GEMM. Only the tiled shader so far; another kernel
   (a cooperative-matrix one, say) is a new value chosen in plan_gemm. */
enum class GemmKernel { kTiled };

struct GemmPlan {
  GemmKernel kernel = GemmKernel::kTiled;
  const GemmTile* tile = nullptr;
  bool vec4 = false;    /* a and w read as vectors of 4 (specialization constant 0 of gemm.comp) */
  uint32_t splits = 1;  /* > 1: split-K, k in runs of k_chunk (a multiple of kGemmTileK) */
  uint32_t k_chunk = 0;
  uint32_t column_tiles = 0, row_tiles = 0;
};

/* The plan for out[m, n] = a[m, k] w[n, k]^T with elements of elem_bytes,
   where rows_vec4 says every row of a and w starts on a multiple of 4
   elements (k and both element offsets). m > kGemmRowsMax (fewer rows take
   the GEMV), n at most kMaxGroupsPerDispatch * kGemmTileNMin (check_gemm_n).

   The tile: the small one for m <= 32; the large one where m and n are
   both at least 128 and it still makes kGemmFillGroups workgroups (enough
   to occupy a large GPU); the medium one otherwise; each only where the
   device's limits hold it, else the next smaller (the small tile fits every
   device). Split-K when the chosen tile leaves fewer than kGemmFillGroups
   workgroups. */
GemmPlan plan_gemm(uint64_t m, uint64_t n, uint64_t k, uint32_t elem_bytes, bool rows_vec4,
                   const GemmDeviceLimits& limits);

/* Split-K: a GEMM of fewer tiles than kGemmFillGroups splits k into up to
   kGemmMaxSplits runs of at least kGemmMinSplitK, rounded up to whole
   kGemmTileK steps. */
constexpr uint64_t kGemmFillGroups = 256;
constexpr uint64_t kGemmMaxSplits = 16;
constexpr uint64_t kGemmMinSplitK = 256;
/* Workgroups per grid dimension: the least every device allows. */
constexpr uint32_t kMaxGroupsPerDispatch = 65535;

}  // namespace rill_vk

#endif
