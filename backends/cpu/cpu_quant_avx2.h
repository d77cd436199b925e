// The AVX2 helpers shared by the block-weight kernels (cpu_quant_dot_avx2.cpp,
// and cpu_quant_tile.inc through cpu_quant_tile_avx2.cpp and
// cpu_quant_tile_vnni.cpp). Include only from translation units compiled
// with AVX2. Static: those units are compiled for different ISAs, and one
// shared inline copy (picked by the linker from any of them) could carry
// AVX-512 instructions into the AVX2 kernels.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace rill::cpu::quantized {

static inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Sum of u[l] * s[l] in 8 int32 lanes, u unsigned bytes < 128 or Q8_0
// magnitudes (<= 128), s signed: maddubs' int16 pairs (at most 2 * 128 * 127)
// do not saturate, and madd widens them exactly. The VNNI tiles define their
// own, which hides this one.
static inline __m256i dot_u8_s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// acc + the int16 pairs of `pairs` times those of `scale`, each adjacent two
// products summed into an int32 lane, exactly (madd, then add). The VNNI
// tiles define their own, one vpdpwssd, which hides this one.
static inline __m256i madd_accumulate(__m256i acc, __m256i pairs, __m256i scale) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, scale));
}

// The 32 nibbles of Q4_0's (and Q5_0's, Q5_1's) 16 bytes, in element order.
static inline __m256i nibbles_32(const uint8_t* qs) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i mask = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(bytes, 4), mask), _mm_and_si128(bytes, mask));
}

// Bit l of the little-endian uint32 at qh as byte l (0 or 16): each byte
// picks its qh byte (l / 8) and tests its bit (l % 8).
static inline __m256i fifth_bits(const uint8_t* qh) {
  int32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(bits), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(16));
}

// The low (shift 0) or high (shift 4) nibbles of 32 bytes, as bytes.
static inline __m256i nibbles(const uint8_t* p, int shift) {
  return _mm256_and_si256(_mm256_srl_epi16(load32(p), _mm_cvtsi32_si128(shift)), _mm256_set1_epi8(15));
}

// Bits shift .. shift + width - 1 of each of 32 bytes, as bytes.
static inline __m256i bit_field(const uint8_t* p, int shift, int width) {
  return _mm256_and_si256(_mm256_srl_epi16(load32(p), _mm_cvtsi32_si128(shift)),
                          _mm256_set1_epi8(static_cast<char>((1 << width) - 1)));
}

}  // namespace rill::cpu::quantized
