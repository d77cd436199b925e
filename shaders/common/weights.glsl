// Weights of any rill dtype, read by element from binding 1 as 32-bit words,
// so that the GGUF block layouts (34- and 18-byte blocks, byte fields) need
// no 8-bit storage. One of -DWEIGHT_F32, WEIGHT_F16, WEIGHT_BF16, WEIGHT_Q8_0,
// WEIGHT_Q4_0, WEIGHT_Q5_0, WEIGHT_Q5_1, WEIGHT_Q4_K, WEIGHT_Q5_K or
// WEIGHT_Q6_K picks the layout.
//
// weight_run (below) reads a run of WEIGHT_RUN elements of a row. The block
// formats compute as runtime/quant's reference dequantizers do, in the same
// order and without fused multiply-adds (precise), so they give the same floats.
#ifndef RILL_WEIGHTS_GLSL
#define RILL_WEIGHTS_GLSL

layout(std430, set = 0, binding = 1) readonly buffer WeightBuffer { uint weight_words[]; };

uint weight_byte(uint b) { return (weight_words[b >> 2] >> ((b & 3u) << 3)) & 0xFFu; }
// The 16-bit field at byte b, any alignment: a table may start at an odd
// byte (rill_backend_tensor.offset), and then so do its blocks' fields. Only
// a field at the last byte of a word reads the next word, which then holds
// its high byte, so no word beyond the weights is read.
uint weight_u16(uint b) {
  uint word = b >> 2, shift = (b & 3u) << 3;
  uint v = weight_words[word] >> shift;
  if (shift == 24u) v |= weight_words[word + 1u] << 8;
  return v & 0xFFFFu;
}
float weight_f16(uint b) { return unpackHalf2x16(weight_u16(b)).x; }
int sign_extend8(uint byte_value) { return int(byte_value << 24) >> 24; }
int weight_i8(uint b) { return sign_extend8(weight_byte(b)); }

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

#if defined(WEIGHT_F32) || defined(WEIGHT_F16) || defined(WEIGHT_BF16)
#define WEIGHT_RUN 1u
#else
// A run of 8 elements shares its block's (and sub-block's) scales and
// reads its quants as two words (weight_bytes8).
#define WEIGHT_RUN 8u

// The 8 bytes at byte b (any alignment) as two little-endian words; the
// words read hold only bytes of the weights.
uvec2 weight_bytes8(uint b) {
  uint word = b >> 2, shift = (b & 3u) << 3;
  uvec2 v = uvec2(weight_words[word], weight_words[word + 1u]);
  if (shift != 0u) {
    uint next = weight_words[word + 2u];
    v = uvec2((v.x >> shift) | (v.y << (32u - shift)), (v.y >> shift) | (next << (32u - shift)));
  }
  return v;
}
// Byte t (0-7) of weight_bytes8's pair.
uint run_byte(uvec2 v, uint t) { return (v[t >> 2] >> ((t & 3u) << 3)) & 0xFFu; }
#endif

// weight_run(row_byte, first, w): elements first ... first + WEIGHT_RUN - 1
// of the row whose first byte is row_byte (bytes from the start of the bound
// range); first is a multiple of WEIGHT_RUN.
#if defined(WEIGHT_F32)
void weight_run(uint row_byte, uint first, out float w[WEIGHT_RUN]) {
  w[0] = uintBitsToFloat(weight_words[(row_byte >> 2) + first]);
}
#elif defined(WEIGHT_F16)
void weight_run(uint row_byte, uint first, out float w[WEIGHT_RUN]) { w[0] = weight_f16(row_byte + 2u * first); }
#elif defined(WEIGHT_BF16)
void weight_run(uint row_byte, uint first, out float w[WEIGHT_RUN]) {
  w[0] = uintBitsToFloat(weight_u16(row_byte + 2u * first) << 16);
}
#elif defined(WEIGHT_Q8_0)
// d (f16), then 32 int8 quants.
void weight_run(uint row_byte, uint first, out float w[WEIGHT_RUN]) {
  uint base = row_byte + (first >> 5) * 34u;
  float d = weight_f16(base);
  uvec2 q = weight_bytes8(base + 2u + (first & 31u));
  for (uint t = 0u; t < WEIGHT_RUN; ++t) {
    precise float y = float(sign_extend8(run_byte(q, t))) * d;
    w[t] = y;
  }
}
#elif defined(WEIGHT_Q4_0)
// d (f16), then 16 bytes: element e < 16 in the low nibble of byte e, e + 16 in its high nibble.
void weight_run(uint row_byte, uint first, out float w[WEIGHT_RUN]) {
  uint base = row_byte + (first >> 5) * 18u, e = first & 31u;
  float d = weight_f16(base);
  uvec2 q = weight_bytes8(base + 2u + (e & 15u));
  uint shift = (e >> 4) << 2;
  for (uint t = 0u; t < WEIGHT_RUN; ++t) {
    precise float y = d * float(int((run_byte(q, t) >> shift) & 0xFu) - 8);
    w[t] = y;
  }
}
#elif defined(WEIGHT_Q5_0) || defined(WEIGHT_Q5_1)
// d, (Q5_1) m (f16), a little-endian word whose bit e is element e's fifth
// bit, then Q4_0's 16 bytes of low nibbles. Q5_0: x = d * (q - 16); Q5_1:
// x = d * q + m, rounded twice as the reference does.
#if defined(WEIGHT_Q5_0)
#define BLOCK_BYTES 22u
#define QH_OFFSET 2u
#else
#define BLOCK_BYTES 24u
#define QH_OFFSET 4u
#endif
void weight_run(uint row_byte, uint first, out float w[WEIGHT_RUN]) {
  uint base = row_byte + (first >> 5) * BLOCK_BYTES, e = first & 31u;
  float d = weight_f16(base);
  uint fifth = weight_u16(base + QH_OFFSET) | (weight_u16(base + QH_OFFSET + 2u) << 16);
  uvec2 q = weight_bytes8(base + QH_OFFSET + 4u + (e & 15u));
  uint shift = (e >> 4) << 2;
#if defined(WEIGHT_Q5_1)
  float m = weight_f16(base + 2u);
#endif
  for (uint t = 0u; t < WEIGHT_RUN; ++t) {
    uint v = ((run_byte(q, t) >> shift) & 0xFu) | (((fifth >> (e + t)) & 1u) << 4);
#if defined(WEIGHT_Q5_0)
    precise float y = d * float(int(v) - 16);
#else
    precise float dq = d * float(v);
    precise float y = dq + m;
#endif
    w[t] = y;
  }
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
void weight_run(uint row_byte, uint first, out float w[WEIGHT_RUN]) {
  uint base = row_byte + (first >> 8) * BLOCK_BYTES, e = first & 255u;
  uint j = e >> 5, l = e & 31u;
  uvec2 scale_min = weight_scale_min_k(base + 4u, j);
  precise float dl = weight_f16(base) * float(scale_min.x);
  precise float ml = weight_f16(base + 2u) * float(scale_min.y);
  uvec2 nibbles = weight_bytes8(base + QS_OFFSET + 32u * (j >> 1) + l);
  uint shift = (j & 1u) << 2;
#if defined(WEIGHT_Q5_K)
  uvec2 fifth = weight_bytes8(base + 16u + l);
#endif
  for (uint t = 0u; t < WEIGHT_RUN; ++t) {
    uint q = (run_byte(nibbles, t) >> shift) & 0xFu;
#if defined(WEIGHT_Q5_K)
    q |= ((run_byte(fifth, t) >> j) & 1u) << 4;
#endif
    precise float y = dl * float(q) - ml;
    w[t] = y;
  }
}
#elif defined(WEIGHT_Q6_K)
// 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales (one per
// 16 elements), d (f16). Element 128 h + 32 s + l: low nibble (s / 2) of byte
// 64 h + 32 (s % 2) + l, high bits 2 s of byte 32 h + l.
void weight_run(uint row_byte, uint first, out float w[WEIGHT_RUN]) {
  uint base = row_byte + (first >> 8) * 210u, e = first & 255u;
  uint h = e >> 7, s = (e >> 5) & 3u, l = e & 31u;
  precise float dl = weight_f16(base + 208u) * float(weight_i8(base + 192u + (e >> 4)));
  uvec2 low = weight_bytes8(base + 64u * h + 32u * (s & 1u) + l);
  uvec2 high = weight_bytes8(base + 128u + 32u * h + l);
  for (uint t = 0u; t < WEIGHT_RUN; ++t) {
    uint q = ((run_byte(low, t) >> ((s >> 1) << 2)) & 0xFu) | (((run_byte(high, t) >> (2u * s)) & 3u) << 4);
    precise float y = dl * float(int(q) - 32);
    w[t] = y;
  }
}
#else
#error "define one of WEIGHT_F32, WEIGHT_F16, WEIGHT_BF16, WEIGHT_Q8_0, WEIGHT_Q4_0, WEIGHT_Q5_0, WEIGHT_Q5_1, WEIGHT_Q4_K, WEIGHT_Q5_K, WEIGHT_Q6_K"
#endif

#endif
