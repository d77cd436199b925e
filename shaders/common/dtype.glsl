// Storage dtype of every tensor binding, chosen by one of -DDTYPE_F32,
// -DDTYPE_F16 or -DDTYPE_BF16. Arithmetic is always f32: TO_F32 widens a stored
// element and FROM_F32 rounds an f32 to the storage type. VEC4_STORAGE_T
// holds 4 stored elements, for vector loads through an aliased binding, and
// VEC4_TO_F32 widens it to a vec4.
//
// PAIR_T holds two stored elements as workgroup memory keeps them (the GEMM
// tiles): f32 as a vec2, the 16-bit dtypes in one uint, the first element in
// the low half (f16 by packHalf2x16, given f16 values, so nothing rounds;
// bf16 as its bits). 16-bit values cannot be shader variables (16-bit
// storage only), so a stored element is first held unchanged in a 32-bit
// WIDE_T (WIDE4_T for 4, from TO_WIDE and VEC4_TO_WIDE: the value for f32 and
// f16, the bits for bf16); PACK_PAIR packs two of them, PAIR_TO_F32 widens a
// pair to a vec2.
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
#define WIDE_T float
#define WIDE4_T vec4
#define TO_WIDE(v) (v)
#define VEC4_TO_WIDE(v) (v)
#define PAIR_T vec2
#define PACK_PAIR(x, y) vec2(x, y)
#define PAIR_TO_F32(v) (v)
#elif defined(DTYPE_F16)
#define STORAGE_T float16_t
#define VEC4_STORAGE_T f16vec4
#define TO_F32(v) float(v)
#define VEC4_TO_F32(v) vec4(v)
#define FROM_F32(f) float16_t(f)
#define WIDE_T float
#define WIDE4_T vec4
#define TO_WIDE(v) float(v)
#define VEC4_TO_WIDE(v) vec4(v)
#define PAIR_T uint
#define PACK_PAIR(x, y) packHalf2x16(vec2(x, y))
#define PAIR_TO_F32(v) unpackHalf2x16(v)
#elif defined(DTYPE_BF16)
#define STORAGE_T uint16_t
#define VEC4_STORAGE_T u16vec4
#define TO_F32(v) uintBitsToFloat(uint(v) << 16)
#define VEC4_TO_F32(v) uintBitsToFloat(uvec4(v) << 16)
#define FROM_F32(f) uint16_t(bf16_bits_from_f32(f))
#define WIDE_T uint
#define WIDE4_T uvec4
#define TO_WIDE(v) uint(v)
#define VEC4_TO_WIDE(v) uvec4(v)
#define PAIR_T uint
#define PACK_PAIR(x, y) (uint(x) | (uint(y) << 16))
#define PAIR_TO_F32(v) vec2(uintBitsToFloat((v) << 16), uintBitsToFloat((v) & 0xffff0000u))
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
