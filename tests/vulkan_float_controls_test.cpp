// The float-controls modes the Vulkan plugin adds to its f16 shaders
// (backends/vulkan/vk_float_controls.h), checked on the embedded modules with
// SPIRV-Tools: spirv-val accepts every patched module for Vulkan 1.2, and
// spirv-dis shows exactly the capabilities and execution modes asked for.
// Exits 77 (skipped) without spirv-val and spirv-dis.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "activation_bf16.h"
#include "activation_f16.h"
#include "test_helpers.h"
#include "vk_float_controls.h"

#include <unistd.h>

namespace {

using rill_vk::F16FloatControls;

const size_t kF16Words = sizeof(rill_spv_activation_f16) / 4;

// Writes the module to a scratch file of this process; returns its path.
std::string write_module(const std::vector<uint32_t>& code) {
  const std::string path = rill_test::scratch_path("rill_float_controls_" + std::to_string(getpid()), ".spv");
  rill_test::write_text_file(path, std::string(reinterpret_cast<const char*>(code.data()), code.size() * 4));
  return path;
}

// spirv-dis's text of the module (ids by number, so lines are stable).
std::string disassemble(const std::string& path) {
  const std::string command = std::string(RILL_SPIRV_DIS) + " --raw-id " + path;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string text;
  char chunk[4096];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) text.append(chunk, n);
  REQUIRE(pclose(pipe) == 0);
  return text;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("f16 modules get the modes asked for and stay valid SPIR-V") {
  const uint32_t* plain = rill_spv_activation_f16;
  CHECK(rill_vk::declares_float16(plain, kF16Words));
  CHECK_FALSE(rill_vk::declares_float16(rill_spv_activation_bf16, sizeof(rill_spv_activation_bf16) / 4));
  for (const F16FloatControls modes :
       {F16FloatControls{true, false}, F16FloatControls{false, true}, F16FloatControls{true, true},
        F16FloatControls{false, false}, F16FloatControls{true, true, true, false},
        F16FloatControls{true, true, false, true}, F16FloatControls{true, true, true, true}}) {
    CAPTURE(modes.round_to_nearest_even);
    CAPTURE(modes.denorm_preserve);
    CAPTURE(modes.round_to_nearest_even_float64);
    CAPTURE(modes.denorm_preserve_float64);
    const std::vector<uint32_t> patched = rill_vk::with_f16_float_controls(plain, kF16Words, modes);
    // One entry point: a capability (2 words) and a mode (4 words) per mode,
    // and another mode per mode set for f64 too.
    REQUIRE(patched.size() == kF16Words + 6 * (modes.round_to_nearest_even + modes.denorm_preserve) +
                                  4 * (modes.round_to_nearest_even_float64 + modes.denorm_preserve_float64));
    const std::string path = write_module(patched);
    CHECK(std::system((std::string(RILL_SPIRV_VAL) + " --target-env vulkan1.2 " + path).c_str()) == 0);
    const std::string text = disassemble(path);
    CHECK(count_of(text, "OpCapability RoundingModeRTE\n") == size_t(modes.round_to_nearest_even));
    CHECK(count_of(text, "OpCapability DenormPreserve\n") == size_t(modes.denorm_preserve));
    CHECK(count_of(text, " RoundingModeRTE 16\n") == size_t(modes.round_to_nearest_even));
    CHECK(count_of(text, " DenormPreserve 16\n") == size_t(modes.denorm_preserve));
    CHECK(count_of(text, " RoundingModeRTE 64\n") == size_t(modes.round_to_nearest_even_float64));
    CHECK(count_of(text, " DenormPreserve 64\n") == size_t(modes.denorm_preserve_float64));
    std::remove(path.c_str());
  }
}

namespace {

// A device's float-controls properties with both 16- and 64-bit modes
// supported or not, and one independence for rounding and denormals.
VkPhysicalDeviceFloatControlsProperties properties(VkShaderFloatControlsIndependence independence, bool float16,
                                                   bool float64) {
  VkPhysicalDeviceFloatControlsProperties p{};
  p.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES;
  p.roundingModeIndependence = independence;
  p.denormBehaviorIndependence = independence;
  p.shaderRoundingModeRTEFloat16 = p.shaderDenormPreserveFloat16 = float16 ? VK_TRUE : VK_FALSE;
  p.shaderRoundingModeRTEFloat64 = p.shaderDenormPreserveFloat64 = float64 ? VK_TRUE : VK_FALSE;
  p.shaderRoundingModeRTEFloat32 = p.shaderDenormPreserveFloat32 = VK_TRUE;
  return p;
}

}  // namespace

TEST_CASE("the modes asked for follow the device's independence of widths") {
  using Modes = F16FloatControls;
  const auto same = [](Modes a, Modes b) {
    return a.round_to_nearest_even == b.round_to_nearest_even && a.denorm_preserve == b.denorm_preserve &&
           a.round_to_nearest_even_float64 == b.round_to_nearest_even_float64 &&
           a.denorm_preserve_float64 == b.denorm_preserve_float64;
  };
  const auto decide = [](VkShaderFloatControlsIndependence independence, bool float16, bool float64) {
    return rill_vk::supported_f16_float_controls(properties(independence, float16, float64));
  };
  constexpr VkShaderFloatControlsIndependence kAll = VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL;
  constexpr VkShaderFloatControlsIndependence k32Only = VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_32_BIT_ONLY;
  constexpr VkShaderFloatControlsIndependence kNone = VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE;
  // ALL: the 16-bit modes alone, whatever f64 supports.
  CHECK(same(decide(kAll, true, false), Modes{true, true, false, false}));
  CHECK(same(decide(kAll, true, true), Modes{true, true, false, false}));
  // 32_BIT_ONLY: f16 and f64 share their modes, so both or neither.
  CHECK(same(decide(k32Only, true, true), Modes{true, true, true, true}));
  CHECK(same(decide(k32Only, true, false), Modes{}));
  CHECK(same(decide(k32Only, false, true), Modes{}));
  // NONE: every width shares one mode, f32's included: none requested.
  CHECK(same(decide(kNone, true, true), Modes{}));
  // Without the 16-bit mode, nothing, whatever the independence.
  CHECK(same(decide(kAll, false, true), Modes{}));
  // Rounding and denormals are decided each by its own independence.
  VkPhysicalDeviceFloatControlsProperties mixed = properties(kAll, true, false);
  mixed.denormBehaviorIndependence = k32Only;
  CHECK(same(rill_vk::supported_f16_float_controls(mixed), Modes{true, false, false, false}));
  mixed.shaderDenormPreserveFloat64 = VK_TRUE;
  CHECK(same(rill_vk::supported_f16_float_controls(mixed), Modes{true, true, false, true}));
}

TEST_CASE("a module without the SPIR-V 1.4 layout is refused, not patched") {
  std::vector<uint32_t> module(rill_spv_activation_f16, rill_spv_activation_f16 + kF16Words);
  const F16FloatControls rte{true, false};
  std::vector<uint32_t> old_version = module;
  old_version[1] = 0x00010300;  // SPIR-V 1.3: float controls would need the extension
  CHECK(rill_vk::with_f16_float_controls(old_version.data(), old_version.size(), rte).empty());
  std::vector<uint32_t> broken = module;
  broken[5] &= 0xFFFFu;  // the first instruction's word count 0
  CHECK(rill_vk::with_f16_float_controls(broken.data(), broken.size(), rte).empty());
  module[0] = 0;  // not SPIR-V
  CHECK(rill_vk::with_f16_float_controls(module.data(), module.size(), rte).empty());
}

int main(int argc, char** argv) {
  if (std::string(RILL_SPIRV_VAL).empty() || std::string(RILL_SPIRV_DIS).empty()) {
    std::printf("skipped: spirv-val or spirv-dis (SPIRV-Tools) not found at configure time\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
