// Weights of any rill dtype, read by element from binding 1 as 32-bit words,
// so that the GGUF block layouts (34- and 18-byte blocks, byte fields) need
// no 8-bit storage. One of -DWEIGHT_F32, WEIGHT_F16, WEIGHT_BF16, WEIGHT_Q8_0,
// WEIGHT_Q4_0, WEIGHT_Q4_K, WEIGHT_Q5_K or WEIGHT_Q6_K picks the layout.
//
// weight_at(row_byte, i) is element i of the row whose first byte is
// row_byte (bytes from the start of the bound range). The block formats
// compute as runtime/quant's reference dequantizers do, in the same order and
// without fused multiply-adds (precise), so they give the same floats.
#ifndef RILL_WEIGHTS_GLSL
#define RILL_WEIGHTS_GLSL

layout(std430, set = 0, binding = 1) readonly buffer WeightBuffer { uint weight_words[]; };

uint weight_byte(uint b) { return (weight_words[b >> 2] >> ((b & 3u) << 3)) & 0xFFu; }
// A 16-bit field; every one sits at an even byte.
uint weight_u16(uint b) { return (weight_words[b >> 2] >> ((b & 2u) << 3)) & 0xFFFFu; }
float weight_f16(uint b) { return unpackHalf2x16(weight_u16(b)).x; }
int weight_i8(uint b) { return int(weight_byte(b) << 24) >> 24; }

#if defined(WEIGHT_Q4_K) || defined(WEIGHT_Q5_K)
// Sub-block j's 6-bit scale (x) and min (y) from the 12 packed bytes at scales.
uvec2 weight_scale_min_k(uint scales, uint j) {
  if (j < 4u) {
    return uvec2(weight_byte(scales + j) & 63u, weight_byte(scales + j + 4u) & 63u);
  }
  uint packed_low = weight_byte(scales + j + 4u);
  return uvec2((packed_low & 0xFu) | ((weight_byte(scales + j - 4u) >> 6) << 4),
               (packed_low >> 4) | ((weight_byte(scales + j) >> 6) << 4));
}
#endif

#if defined(WEIGHT_F32)
float weight_at(uint row_byte, uint i) { return uintBitsToFloat(weight_words[(row_byte >> 2) + i]); }
#elif defined(WEIGHT_F16)
float weight_at(uint row_byte, uint i) { return weight_f16(row_byte + 2u * i); }
#elif defined(WEIGHT_BF16)
float weight_at(uint row_byte, uint i) { return uintBitsToFloat(weight_u16(row_byte + 2u * i) << 16); }
#elif defined(WEIGHT_Q8_0)
// d (f16), then 32 int8 quants.
float weight_at(uint row_byte, uint i) {
  uint base = row_byte + (i >> 5) * 34u, e = i & 31u;
  precise float y = float(weight_i8(base + 2u + e)) * weight_f16(base);
  return y;
}
#elif defined(WEIGHT_Q4_0)
// d (f16), then 16 bytes: element e < 16 in the low nibble of byte e, e + 16 in its high nibble.
float weight_at(uint row_byte, uint i) {
  uint base = row_byte + (i >> 5) * 18u, e = i & 31u;
  uint q = (weight_byte(base + 2u + (e & 15u)) >> ((e >> 4) << 2)) & 0xFu;
  precise float y = weight_f16(base) * float(int(q) - 8);
  return y;
}
#elif defined(WEIGHT_Q4_K) || defined(WEIGHT_Q5_K)
// d, dmin (f16), 12 bytes of scales and mins, (Q5_K) 32 bytes of fifth bits,
// 128 bytes of nibbles: sub-block j (32 elements) in the low (even j) or high
// (odd j) nibbles of bytes 32 (j / 2) ... 32 (j / 2) + 31.
#if defined(WEIGHT_Q4_K)
#define BLOCK_BYTES 144u
#define QS_OFFSET 16u
#else
#define BLOCK_BYTES 176u
#define QS_OFFSET 48u
#endif
float weight_at(uint row_byte, uint i) {
  uint base = row_byte + (i >> 8) * BLOCK_BYTES, e = i & 255u;
  uint j = e >> 5, l = e & 31u;
  uvec2 scale_min = weight_scale_min_k(base + 4u, j);
  uint q = (weight_byte(base + QS_OFFSET + 32u * (j >> 1) + l) >> ((j & 1u) << 2)) & 0xFu;
#if defined(WEIGHT_Q5_K)
  q |= ((weight_byte(base + 16u + l) >> j) & 1u) << 4;
#endif
  precise float dl = weight_f16(base) * float(scale_min.x);
  precise float ml = weight_f16(base + 2u) * float(scale_min.y);
  precise float y = dl * float(q) - ml;
  return y;
}
#elif defined(WEIGHT_Q6_K)
// 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales (one per
// 16 elements), d (f16). Element 128 h + 32 s + l: low nibble (s / 2) of byte
// 64 h + 32 (s % 2) + l, high bits 2 s of byte 32 h + l.
float weight_at(uint row_byte, uint i) {
  uint base = row_byte + (i >> 8) * 210u, e = i & 255u;
  uint h = e >> 7, s = (e >> 5) & 3u, l = e & 31u;
  uint low = (weight_byte(base + 64u * h + 32u * (s & 1u) + l) >> ((s >> 1) << 2)) & 0xFu;
  uint high = (weight_byte(base + 128u + 32u * h + l) >> (2u * s)) & 3u;
  precise float dl = weight_f16(base + 208u) * float(weight_i8(base + 192u + (e >> 4)));
  precise float y = dl * float(int(low | (high << 4)) - 32);
  return y;
}
#else
#error "define one of WEIGHT_F32, WEIGHT_F16, WEIGHT_BF16, WEIGHT_Q8_0, WEIGHT_Q4_0, WEIGHT_Q4_K, WEIGHT_Q5_K, WEIGHT_Q6_K"
#endif

#endif
