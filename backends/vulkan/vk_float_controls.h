/* Float-controls execution modes for 16-bit floats, added to a SPIR-V module
   when its pipeline is made. SPIR-V execution modes cannot be specialization
   constants, so rather than building each f16 shader once per combination
   of modes, the build embeds one module and the plugin inserts what the
   device supports. Uses Vulkan's types only (no Vulkan calls), so that it is
   tested on its own (tests/vulkan_float_controls_test.cpp). */
#ifndef RILL_VK_FLOAT_CONTROLS_H
#define RILL_VK_FLOAT_CONTROLS_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include <vulkan/vulkan_core.h>

namespace rill_vk {

struct F16FloatControls {
  bool round_to_nearest_even = false; /* RoundingModeRTE 16 */
  bool denorm_preserve = false;       /* DenormPreserve 16 */
  /* Each mode set for 64-bit floats too, where the device ties the 16- and
     64-bit modes together (INDEPENDENCE_32_BIT_ONLY). */
  bool round_to_nearest_even_float64 = false; /* RoundingModeRTE 64 */
  bool denorm_preserve_float64 = false;       /* DenormPreserve 64 */
};

/* The modes a device with these float-controls properties allows on the f16
   shaders. Where each width's mode is independent (ALL), a supported 16-bit
   mode is requested alone; where only 32-bit is independent (32_BIT_ONLY),
   16- and 64-bit must share their mode, so a 16-bit mode is requested only
   when the 64-bit one is supported too, and is then set for both widths (the
   shaders use no f64, so the 64-bit mode changes nothing they compute); with
   NONE, all widths must share one mode and none is requested. */
F16FloatControls supported_f16_float_controls(const VkPhysicalDeviceFloatControlsProperties& properties);

/* True when the module declares a 16-bit float type (the f16 variants; bf16
   is stored as 16-bit integers). */
bool declares_float16(const uint32_t* code, size_t words);

/* The module with the requested modes on its entry points and their
   capabilities declared (float controls are core from SPIR-V 1.4, so no
   extension). Empty when the module is not SPIR-V 1.4 or later, or its
   layout is not the one the specification prescribes. */
std::vector<uint32_t> with_f16_float_controls(const uint32_t* code, size_t words, F16FloatControls modes);

}  // namespace rill_vk

#endif
