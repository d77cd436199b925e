// The cooperative-matrix GEMM without a device (backends/vulkan/vk_coopmat.h):
// which matrix shape is chosen from made-up device reports (those of the
// kinds of GPU that report VK_KHR_cooperative_matrix, and ones that must be
// refused), which gemms take the kernel, and, where the build had a compiler
// for it, the embedded shader: present, declaring CooperativeMatrixKHR, and
// valid SPIR-V for Vulkan 1.2 with the float-controls modes added as the
// plugin adds them (a spirv-val that knows the extension: the one beside
// that compiler). Run with --embedded-shader it checks only the shader and
// exits 77 (skipped) when the plugin was built without it or no such
// spirv-val is there; without, only the choice.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_helpers.h"
#include "vk_coopmat.h"
#include "vk_float_controls.h"
#if RILL_VULKAN_COOPMAT_BUILT
#include "gemm_coopmat_f16.h"
#endif

#include <unistd.h>

namespace {

using rill_vk::CooperativeMatrixProperties;
using rill_vk::CoopmatLimits;
using rill_vk::CoopmatTile;

constexpr uint32_t kF16 = 0, kF32 = 1, kSint8 = 3, kSint32 = 5;
constexpr uint32_t kSubgroup = 3, kWorkgroup = 2;

CooperativeMatrixProperties report(uint32_t m, uint32_t n, uint32_t k, uint32_t ab = kF16, uint32_t c = kF32,
                                   uint32_t scope = kSubgroup, bool saturating = false) {
  CooperativeMatrixProperties p;
  p.MSize = m;
  p.NSize = n;
  p.KSize = k;
  p.AType = p.BType = ab;
  p.CType = p.ResultType = c;
  p.scope = scope;
  p.saturatingAccumulation = saturating ? VK_TRUE : VK_FALSE;
  return p;
}

// The least a Vulkan device may offer (maxComputeSharedMemorySize 16384,
// maxComputeWorkGroupInvocations 128, maxComputeWorkGroupSize[0] 128).
CoopmatLimits minimal_limits(uint32_t subgroup_size) { return CoopmatLimits{subgroup_size, 16384, 128, 128}; }

bool same(CoopmatTile a, CoopmatTile b) { return a.m == b.m && a.n == b.n && a.k == b.k; }

std::string text(CoopmatTile t) {
  return std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k);
}

}  // namespace

TEST_CASE("choice: the f16 x f16 -> f32 subgroup shape among what a device reports") {
  // The shapes as NVIDIA's drivers list them: f16 with f16 and f32 results,
  // 8-bit integers, and the largest volume of the f16 -> f32 ones wins.
  const std::vector<CooperativeMatrixProperties> nvidia = {
      report(16, 8, 16), report(16, 8, 8), report(16, 16, 16), report(16, 16, 16, kF16, kF16),
      report(16, 8, 32, kSint8, kSint32), report(16, 16, 32, kSint8, kSint32)};
  CoopmatTile chosen = rill_vk::choose_coopmat_tile(nvidia, {32, 49152, 1024, 1024});
  CHECK_MESSAGE(same(chosen, {16, 16, 16}), text(chosen));
  // A wave-64 device with one shape (as AMD's RDNA3 reports).
  chosen = rill_vk::choose_coopmat_tile({report(16, 16, 16, kF16, kF16), report(16, 16, 16)}, {64, 65536, 1024, 1024});
  CHECK_MESSAGE(same(chosen, {16, 16, 16}), text(chosen));
  // M = 8 rows with 16-wide subgroups (as Intel's Xe lists its shape).
  chosen = rill_vk::choose_coopmat_tile({report(8, 16, 16)}, {16, 65536, 1024, 1024});
  CHECK_MESSAGE(same(chosen, {8, 16, 16}), text(chosen));
  // Equal volumes: the squarer shape, in either order of the list.
  chosen = rill_vk::choose_coopmat_tile({report(32, 8, 16), report(16, 16, 16)}, {32, 65536, 1024, 1024});
  CHECK_MESSAGE(same(chosen, {16, 16, 16}), text(chosen));
  chosen = rill_vk::choose_coopmat_tile({report(16, 16, 16), report(32, 8, 16)}, {32, 65536, 1024, 1024});
  CHECK_MESSAGE(same(chosen, {16, 16, 16}), text(chosen));
}

TEST_CASE("choice: nothing where no report fits the kernel or the device's limits") {
  const CoopmatLimits roomy{32, 65536, 1024, 1024};
  CHECK_FALSE(rill_vk::choose_coopmat_tile({}, roomy).usable());
  // Right shape, wrong types, scope or saturation.
  CHECK_FALSE(rill_vk::choose_coopmat_tile({report(16, 16, 16, kF16, kF16)}, roomy).usable());
  CHECK_FALSE(rill_vk::choose_coopmat_tile({report(16, 16, 16, kSint8, kSint32)}, roomy).usable());
  CHECK_FALSE(rill_vk::choose_coopmat_tile({report(16, 16, 16, kF32, kF32)}, roomy).usable());
  CHECK_FALSE(rill_vk::choose_coopmat_tile({report(16, 16, 16, kF16, kF32, kWorkgroup)}, roomy).usable());
  CHECK_FALSE(rill_vk::choose_coopmat_tile({report(16, 16, 16, kF16, kF32, kSubgroup, true)}, roomy).usable());
  // Sizes the kernel does not take: below 8, above 32, not a power of two.
  CHECK_FALSE(rill_vk::choose_coopmat_tile({report(4, 16, 16), report(64, 16, 16), report(16, 12, 16),
                                            report(16, 16, 64)},
                                           roomy)
                  .usable());
  // The workgroup (4 subgroups) or its shared memory beyond the device.
  CHECK_FALSE(rill_vk::choose_coopmat_tile({report(16, 16, 16)}, {64, 65536, 128, 1024}).usable());
  CHECK_FALSE(rill_vk::choose_coopmat_tile({report(16, 16, 16)}, {64, 65536, 1024, 32}).usable());
  CHECK_FALSE(rill_vk::choose_coopmat_tile({report(16, 16, 16)}, {32, 14335, 1024, 1024}).usable());
  CHECK_FALSE(rill_vk::choose_coopmat_tile({report(16, 16, 16)}, {0, 65536, 1024, 1024}).usable());
}

TEST_CASE("choice: shared memory of a shape, and the least device holds 16x16x16") {
  // a and w tiles of 64 rows x (2 x 16 + 8 padding) halves each, and one
  // 16 x 16 f32 tile per subgroup: 2 x 64 x 40 x 2 + 4 x 256 x 4 bytes.
  CHECK(rill_vk::coopmat_shared_bytes({16, 16, 16}) == 14336);
  CHECK(rill_vk::coopmat_shared_bytes({8, 16, 16}) == (32 + 64) * 40 * 2 + 4 * 128 * 4);
  CHECK(same(rill_vk::choose_coopmat_tile({report(16, 16, 16)}, minimal_limits(32)), {16, 16, 16}));
  // 32x32x16 needs (128 + 128) x 40 x 2 + 4 x 1024 x 4 = 36864 bytes: not
  // on the least device, where the 16x16x16 beside it is taken instead.
  CHECK(same(rill_vk::choose_coopmat_tile({report(32, 32, 16), report(16, 16, 16)}, minimal_limits(32)),
             {16, 16, 16}));
  CHECK(same(rill_vk::choose_coopmat_tile({report(32, 32, 16), report(16, 16, 16)}, {32, 36864, 1024, 1024}),
             {32, 32, 16}));
}

TEST_CASE("choice: which gemms take the kernel") {
  const CoopmatTile tile{16, 16, 16};
  constexpr uint64_t kRowsMax = 8, kGroups = 65535;
  CHECK(rill_vk::coopmat_applies(tile, RILL_DTYPE_F16, 9, 64, kRowsMax, kGroups));
  CHECK(rill_vk::coopmat_applies(tile, RILL_DTYPE_F16, 4096, 4096, kRowsMax, kGroups));
  CHECK_FALSE(rill_vk::coopmat_applies(tile, RILL_DTYPE_F16, 8, 64, kRowsMax, kGroups));  // decode GEMV
  CHECK_FALSE(rill_vk::coopmat_applies(tile, RILL_DTYPE_BF16, 512, 64, kRowsMax, kGroups));
  CHECK_FALSE(rill_vk::coopmat_applies(tile, RILL_DTYPE_F32, 512, 64, kRowsMax, kGroups));
  CHECK_FALSE(rill_vk::coopmat_applies(CoopmatTile{}, RILL_DTYPE_F16, 512, 64, kRowsMax, kGroups));
  // Blocks of 64 columns: 65535 of them fit one dispatch, one more does not.
  CHECK(rill_vk::coopmat_column_groups(tile, 65) == 2);
  CHECK(rill_vk::coopmat_applies(tile, RILL_DTYPE_F16, 512, 65535 * 64, kRowsMax, kGroups));
  CHECK_FALSE(rill_vk::coopmat_applies(tile, RILL_DTYPE_F16, 512, 65535 * 64 + 1, kRowsMax, kGroups));
}

#if RILL_VULKAN_COOPMAT_BUILT
TEST_CASE("shader: the embedded gemm_coopmat_f16 is valid SPIR-V with the cooperative-matrix capability") {
  const uint32_t* code = rill_spv_gemm_coopmat_f16;
  const size_t words = sizeof(rill_spv_gemm_coopmat_f16) / 4;
  REQUIRE(words > 5);
  CHECK(code[0] == 0x07230203u);
  // OpCapability (17, two words) CooperativeMatrixKHR (6022).
  bool cooperative = false;
  for (size_t at = 5; at + 1 < words && (code[at] >> 16) != 0; at += code[at] >> 16) {
    cooperative = cooperative || (code[at] == ((2u << 16) | 17u) && code[at + 1] == 6022u);
  }
  CHECK(cooperative);
  CHECK(rill_vk::declares_float16(code, words));
  for (const rill_vk::F16FloatControls modes : {rill_vk::F16FloatControls{}, rill_vk::F16FloatControls{true, true}}) {
    CAPTURE(modes.round_to_nearest_even);
    const std::vector<uint32_t> patched = modes.round_to_nearest_even
                                              ? rill_vk::with_f16_float_controls(code, words, modes)
                                              : std::vector<uint32_t>(code, code + words);
    REQUIRE(!patched.empty());
    const std::string path =
        rill_test::scratch_path("rill_coopmat_" + std::to_string(getpid()), ".spv");
    rill_test::write_text_file(path, std::string(reinterpret_cast<const char*>(patched.data()), patched.size() * 4));
    CHECK(std::system((std::string(RILL_COOPMAT_SPIRV_VAL) + " --target-env vulkan1.2 " + path).c_str()) == 0);
    std::remove(path.c_str());
  }
}
#endif

int main(int argc, char** argv) {
  doctest::Context runner(argc, argv);
  bool shader = false;
  for (int i = 1; i < argc; ++i) shader = shader || std::strcmp(argv[i], "--embedded-shader") == 0;
  if (shader) {
    if (!RILL_VULKAN_COOPMAT_BUILT) {
      std::printf("skipped: the plugin was built without gemm_coopmat.comp (no glslangValidator found compiles "
                  "GL_KHR_cooperative_matrix; scripts/install-deps.sh --coopmat installs one)\n");
      return 77;
    }
    if (std::strlen(RILL_COOPMAT_SPIRV_VAL) == 0) {
      std::printf("skipped: no spirv-val beside the cooperative-matrix compiler\n");
      return 77;
    }
    runner.addFilter("test-case", "shader:*");
  } else {
    runner.addFilter("test-case", "choice:*");
  }
  return runner.run();
}
