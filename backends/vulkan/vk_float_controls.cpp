#include "vk_float_controls.h"

namespace rill_vk {

namespace {

/* SPIR-V numbers (the specification's "Binary Form"; SPV_KHR_float_controls). */
constexpr uint32_t kMagic = 0x07230203;
constexpr size_t kHeaderWords = 5;
constexpr uint32_t kVersion1_4 = 0x00010400;
constexpr uint32_t kOpCapability = 17;
constexpr uint32_t kOpEntryPoint = 15;
constexpr uint32_t kOpExecutionMode = 16;
constexpr uint32_t kOpTypeFloat = 22;
constexpr uint32_t kCapabilityDenormPreserve = 4464;
constexpr uint32_t kCapabilityRoundingModeRTE = 4467;
constexpr uint32_t kModeDenormPreserve = 4459;
constexpr uint32_t kModeRoundingModeRTE = 4462;

uint32_t opcode(uint32_t first_word) { return first_word & 0xFFFFu; }
uint32_t word_count(uint32_t first_word) { return first_word >> 16; }
uint32_t instruction(uint32_t words, uint32_t op) { return words << 16 | op; }

/* Calls visit(offset) for each instruction after the header; false when an
   instruction's word count is zero or runs past the end. */
template <typename Visit>
bool for_each_instruction(const uint32_t* code, size_t words, Visit visit) {
  if (words < kHeaderWords || code[0] != kMagic) return false;
  for (size_t at = kHeaderWords; at < words;) {
    const uint32_t count = word_count(code[at]);
    if (count == 0 || count > words - at) return false;
    visit(at);
    at += count;
  }
  return true;
}

/* Whether a 16-bit mode the device supports (float16) may be requested, and
   whether it must then be set for 64-bit floats as well. */
bool mode_allowed(VkShaderFloatControlsIndependence independence, VkBool32 float16, VkBool32 float64) {
  if (float16 != VK_TRUE) return false;
  if (independence == VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL) return true;
  return independence == VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_32_BIT_ONLY && float64 == VK_TRUE;
}

}  // namespace

F16FloatControls supported_f16_float_controls(const VkPhysicalDeviceFloatControlsProperties& properties) {
  F16FloatControls modes;
  modes.round_to_nearest_even = mode_allowed(properties.roundingModeIndependence,
                                             properties.shaderRoundingModeRTEFloat16,
                                             properties.shaderRoundingModeRTEFloat64);
  modes.denorm_preserve = mode_allowed(properties.denormBehaviorIndependence,
                                       properties.shaderDenormPreserveFloat16, properties.shaderDenormPreserveFloat64);
  modes.round_to_nearest_even_float64 =
      modes.round_to_nearest_even && properties.roundingModeIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL;
  modes.denorm_preserve_float64 =
      modes.denorm_preserve && properties.denormBehaviorIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL;
  return modes;
}

bool declares_float16(const uint32_t* code, size_t words) {
  bool found = false;
  for_each_instruction(code, words, [&](size_t at) {
    found = found || (opcode(code[at]) == kOpTypeFloat && word_count(code[at]) >= 3 && code[at + 2] == 16);
  });
  return found;
}

std::vector<uint32_t> with_f16_float_controls(const uint32_t* code, size_t words, F16FloatControls modes) {
  /* The logical layout puts every OpCapability first and the entry points
     before the execution modes: the capabilities go after the last
     OpCapability, each mode after the last OpEntryPoint, for every entry point. */
  size_t after_capabilities = 0, after_entry_points = 0;
  std::vector<uint32_t> entry_points;
  const bool parsed = for_each_instruction(code, words, [&](size_t at) {
    const uint32_t op = opcode(code[at]);
    if (op == kOpCapability) after_capabilities = at + word_count(code[at]);
    if (op == kOpEntryPoint && word_count(code[at]) >= 3) {
      entry_points.push_back(code[at + 2]);
      after_entry_points = at + word_count(code[at]);
    }
  });
  if (!parsed || code[1] < kVersion1_4 || after_capabilities == 0 || entry_points.empty() ||
      after_capabilities > after_entry_points) {
    return {};
  }
  std::vector<uint32_t> capabilities, execution_modes;
  const auto add = [&](uint32_t capability, uint32_t mode, bool float64_too) {
    capabilities.insert(capabilities.end(), {instruction(2, kOpCapability), capability});
    for (uint32_t entry_point : entry_points) {
      execution_modes.insert(execution_modes.end(), {instruction(4, kOpExecutionMode), entry_point, mode, 16});
      if (float64_too) {
        execution_modes.insert(execution_modes.end(), {instruction(4, kOpExecutionMode), entry_point, mode, 64});
      }
    }
  };
  if (modes.round_to_nearest_even) {
    add(kCapabilityRoundingModeRTE, kModeRoundingModeRTE, modes.round_to_nearest_even_float64);
  }
  if (modes.denorm_preserve) add(kCapabilityDenormPreserve, kModeDenormPreserve, modes.denorm_preserve_float64);
  std::vector<uint32_t> out(code, code + after_capabilities);
  out.insert(out.end(), capabilities.begin(), capabilities.end());
  out.insert(out.end(), code + after_capabilities, code + after_entry_points);
  out.insert(out.end(), execution_modes.begin(), execution_modes.end());
  out.insert(out.end(), code + after_entry_points, code + words);
  return out;
}

}  // namespace rill_vk
