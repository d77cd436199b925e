// The AVX2 tiles of the quantized GEMM (cpu_quant_tile.inc): maddubs
// multiplies the unsigned weight levels with the signed activations into
// int16 pairs (no saturation at these magnitudes, see cpu_quant_dot_avx2.cpp)
// and madd widens them to int32.
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "cpu_convert.h"
#include "cpu_quant.h"

namespace rill::cpu::quantized::avx2 {
namespace {

inline __m256i dot_u8_s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

}  // namespace

#include "cpu_quant_tile.inc"

}  // namespace rill::cpu::quantized::avx2
