/* The cooperative-matrix GEMM (shaders/gemm_coopmat.comp): the parts of
   VK_KHR_cooperative_matrix rill uses, and the choice of the matrix shape
   and of the kernel. Uses Vulkan's types only (no Vulkan calls), so that the
   choice is tested on its own with made-up device reports
   (tests/vulkan_coopmat_test.cpp). */
#ifndef RILL_VK_COOPMAT_H
#define RILL_VK_COOPMAT_H

#include <cstdint>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "rill.h"

namespace rill_vk {

/* VK_KHR_cooperative_matrix (Vulkan-Headers 1.3.255) postdates the headers
   of Debian 12 (1.3.239), so its few numbers and structs are written out
   here, with the registry's values, under names of rill's own that cannot
   collide with newer headers. */
constexpr VkStructureType kStructurePhysicalDeviceCooperativeMatrixFeatures = static_cast<VkStructureType>(1000506000);
constexpr VkStructureType kStructureCooperativeMatrixProperties = static_cast<VkStructureType>(1000506001);
constexpr uint32_t kComponentFloat16 = 0; /* VK_COMPONENT_TYPE_FLOAT16_KHR */
constexpr uint32_t kComponentFloat32 = 1; /* VK_COMPONENT_TYPE_FLOAT32_KHR */
constexpr uint32_t kScopeSubgroup = 3;    /* VK_SCOPE_SUBGROUP_KHR */
constexpr const char* kCooperativeMatrixExtensionName = "VK_KHR_cooperative_matrix";

/* VkCooperativeMatrixPropertiesKHR: one matrix shape and types the device runs. */
struct CooperativeMatrixProperties {
  VkStructureType sType = kStructureCooperativeMatrixProperties;
  void* pNext = nullptr;
  uint32_t MSize = 0, NSize = 0, KSize = 0;
  uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0;
  VkBool32 saturatingAccumulation = VK_FALSE;
  uint32_t scope = 0;
};
/* VkPhysicalDeviceCooperativeMatrixFeaturesKHR. */
struct PhysicalDeviceCooperativeMatrixFeatures {
  VkStructureType sType = kStructurePhysicalDeviceCooperativeMatrixFeatures;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};
/* vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR. */
using GetCooperativeMatrixProperties = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*,
                                                             CooperativeMatrixProperties*);

/* The matrix shape gemm_coopmat.comp runs with (its specialization constants
   MMA_M, MMA_N, MMA_K); all zero when there is none. */
struct CoopmatTile {
  uint32_t m = 0, n = 0, k = 0;
  bool usable() const { return m != 0; }
};

/* What of the device bounds the kernel's workgroup. */
struct CoopmatLimits {
  uint32_t subgroup_size = 0;
  uint32_t max_shared_bytes = 0;    /* maxComputeSharedMemorySize */
  uint32_t max_invocations = 0;     /* maxComputeWorkGroupInvocations */
  uint32_t max_workgroup_size_x = 0; /* maxComputeWorkGroupSize[0] */
};

/* gemm_coopmat.comp's layout (its #defines): subgroups per workgroup, and the
   accumulators (and so the output block) of each. */
constexpr uint32_t kCoopmatSubgroups = 4;
constexpr uint32_t kCoopmatBlockTiles = 4; /* SUBGROUPS_M * TILES_M, likewise for N */
constexpr uint32_t kCoopmatKSteps = 2;
constexpr uint32_t kCoopmatPad = 8;

/* The shared memory gemm_coopmat.comp declares for a tile. */
uint32_t coopmat_shared_bytes(CoopmatTile tile);

/* The shape for the f16 GEMM among the device's reports: f16 x f16 + f32 ->
   f32, subgroup scope, no saturation, each size a power of two from 8 to 32
   (the staging loops and padding assume it), and a workgroup that the
   limits allow. Among those the largest M x N x K, then the squarest; none
   (usable() false) when no report qualifies. */
CoopmatTile choose_coopmat_tile(const std::vector<CooperativeMatrixProperties>& reports, const CoopmatLimits& limits);

/* The workgroups along N of a gemm_coopmat.comp dispatch for n columns. */
uint64_t coopmat_column_groups(CoopmatTile tile, uint64_t n);

/* Whether a gemm of rows x n outputs takes gemm_coopmat.comp: a tile was
   chosen, the inputs are f16 (the shader's A and B are float16_t; bf16
   matrices need VK_KHR_shader_bfloat16, which the compiler rill builds with
   predates), the rows exceed rows_max (fewer go to the decode GEMV), and the
   column blocks fit one dispatch (max_groups). */
bool coopmat_applies(CoopmatTile tile, rill_dtype dtype, uint64_t rows, uint64_t n, uint64_t rows_max,
                     uint64_t max_groups);

}  // namespace rill_vk

#endif
