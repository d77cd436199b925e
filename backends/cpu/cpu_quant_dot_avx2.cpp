// The AVX2 integer primitives of the quantized row dots (see
// cpu_quant_dot.inc): dot_u8_s8 (cpu_quant_avx2.h) multiplies unsigned weight
// bytes with signed activations exactly, and the lanes are added: exact, as
// the scalar loops.
// The _x4/_x8 primitives reduce four blocks' lanes with one horizontal-add tree.
#include <immintrin.h>

#include <cstring>

#include "cpu_convert.h"
#include "cpu_quant.h"
#include "cpu_quant_avx2.h"

namespace rill::cpu::quantized::avx2 {
namespace {

inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

inline __m128i hsum_halves(__m256i v) {  // lane 0: the low 128 bits' sum, lane 1: the high's
  __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
  lo = _mm_hadd_epi32(lo, hi);  // lo0+lo1, lo2+lo3, hi0+hi1, hi2+hi3
  return _mm_hadd_epi32(lo, lo);
}

// The four int32 sums of v0 .. v3's lanes, in order.
inline __m128i reduce4(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
  const __m256i pairs = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
  return _mm_add_epi32(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
}

// w * a = |w| * (a with w's sign), so the unsigned operand is |w|.
inline __m256i dot_s8_vec(const int8_t* w, const int8_t* a) {
  const __m256i wv = load32(w), av = load32(a);
  return dot_u8_s8(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(av, wv));
}

inline __m256i dot_q4_0_vec(const uint8_t* qs, const int8_t* a) { return dot_u8_s8(nibbles_32(qs), load32(a)); }

int32_t dot_q5_32(const uint8_t* qs, const uint8_t* qh, const int8_t* a) {
  return hsum(dot_u8_s8(_mm256_or_si256(nibbles_32(qs), fifth_bits(qh)), load32(a)));
}

int32_t dot_s8(const int8_t* w, const int8_t* a) { return hsum(dot_s8_vec(w, a)); }

int32_t dot_q4_0(const uint8_t* qs, const int8_t* a) { return hsum(dot_q4_0_vec(qs, a)); }

void dot_s8_x4(const quant::BlockQ8_0* w, const ActBlock* a, int32_t* out) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   reduce4(dot_s8_vec(w[0].qs, a[0].q), dot_s8_vec(w[1].qs, a[1].q), dot_s8_vec(w[2].qs, a[2].q),
                           dot_s8_vec(w[3].qs, a[3].q)));
}

void dot_q4_0_x4(const quant::BlockQ4_0* w, const ActBlock* a, int32_t* out) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   reduce4(dot_q4_0_vec(w[0].qs, a[0].q), dot_q4_0_vec(w[1].qs, a[1].q),
                           dot_q4_0_vec(w[2].qs, a[2].q), dot_q4_0_vec(w[3].qs, a[3].q)));
}

void dot_nib_x8(const uint8_t* qs, const ActBlock* a, int32_t* out) {
  __m256i v[8];
  for (int r = 0; r < 4; ++r) {
    v[2 * r] = dot_u8_s8(nibbles(qs + 32 * r, 0), load32(a[2 * r].q));
    v[2 * r + 1] = dot_u8_s8(nibbles(qs + 32 * r, 4), load32(a[2 * r + 1].q));
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), reduce4(v[0], v[1], v[2], v[3]));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4), reduce4(v[4], v[5], v[6], v[7]));
}

void dot_q5_x8(const uint8_t* qs, const uint8_t* qh, const ActBlock* a, int32_t* out) {
  __m256i v[8];
  for (int j = 0; j < 8; ++j) {
    const __m256i fifth = _mm256_slli_epi16(bit_field(qh, j, 1), 4);
    const __m256i q = _mm256_or_si256(nibbles(qs + 32 * (j / 2), 4 * (j % 2)), fifth);
    v[j] = dot_u8_s8(q, load32(a[j].q));
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), reduce4(v[0], v[1], v[2], v[3]));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4), reduce4(v[4], v[5], v[6], v[7]));
}

void dot_q6(const uint8_t* ql, int shift, const uint8_t* qh, int hshift, const int8_t* a, int32_t* out) {
  const __m256i q = _mm256_or_si256(nibbles(ql, shift), _mm256_slli_epi16(bit_field(qh, hshift, 2), 4));
  const __m256i av = load32(a);
  // sum of (q - 32) * a = sum of q * a - 32 * sum of a, per 16-element half.
  const __m256i qa = dot_u8_s8(q, av);
  const __m256i a32 = dot_u8_s8(_mm256_set1_epi8(32), av);
  const __m128i halves = hsum_halves(_mm256_sub_epi32(qa, a32));
  out[0] = _mm_cvtsi128_si32(halves);
  out[1] = _mm_extract_epi32(halves, 1);
}

}  // namespace

#include "cpu_quant_dot.inc"

}  // namespace rill::cpu::quantized::avx2
