// Storage dtype of every tensor binding, chosen by one of -DDTYPE_F32,
// -DDTYPE_F16 or -DDTYPE_BF16. Arithmetic is always f32: TO_F32 widens a stored
// element and FROM_F32 rounds an f32 to the storage type. VEC4_STORAGE_T
// holds 4 stored elements, for vector loads through an aliased binding, and
// VEC4_TO_F32 widens it to a vec4.
//
// f16 uses 16-bit storage (VK_KHR_16bit_storage) with float16_t loads and
// stores. bf16 has no storage type of its own here, so it is kept as uint16_t
// and converted with bit operations: widening is a shift, narrowing rounds to
// nearest even like the CPU backend. Include common/extensions.glsl first.
//
// Without float controls, how an f32 -> f16 conversion rounds and whether f16
// denormals survive is the driver's choice. The plugin adds SPIR-V
// RoundingModeRTE and DenormPreserve for 16-bit floats to the f16 variants
// where the device supports them (backends/vulkan/vk_float_controls.h).
#ifndef RILL_DTYPE_GLSL
#define RILL_DTYPE_GLSL

#if defined(DTYPE_F32)
#define STORAGE_T float
#define VEC4_STORAGE_T vec4
#define TO_F32(v) (v)
#define VEC4_TO_F32(v) (v)
#define FROM_F32(f) (f)
#elif defined(DTYPE_F16)
#define STORAGE_T float16_t
#define VEC4_STORAGE_T f16vec4
#define TO_F32(v) float(v)
#define VEC4_TO_F32(v) vec4(v)
#define FROM_F32(f) float16_t(f)
#elif defined(DTYPE_BF16)
#define STORAGE_T uint16_t
#define VEC4_STORAGE_T u16vec4
#define TO_F32(v) uintBitsToFloat(uint(v) << 16)
#define VEC4_TO_F32(v) uintBitsToFloat(uvec4(v) << 16)
#define FROM_F32(f) uint16_t(bf16_bits_from_f32(f))
#else
#error "define one of DTYPE_F32, DTYPE_F16, DTYPE_BF16"
#endif

#if defined(DTYPE_BF16)
// The upper 16 bits of f, rounded to nearest even; a NaN stays a quiet NaN.
uint bf16_bits_from_f32(float f) {
  uint u = floatBitsToUint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return (u >> 16) | 0x40u;
  }
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
#endif

#endif
