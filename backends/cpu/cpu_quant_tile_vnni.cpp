// The AVX-512 VNNI tiles of the quantized GEMM (cpu_quant_tile.inc): one
// vpdpbusd multiplies the unsigned weight levels with the signed activations
// and adds each four products into an int32 lane, exactly; one vpdpwssd
// multiplies int16 pairs and adds them to an accumulator, as madd then add
// would. Only called after cpu_quant_gemm.cpp has checked AVX512-VNNI and
// AVX512-VL.
#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <limits>

#include "cpu_convert.h"
#include "cpu_quant.h"
#include "cpu_quant_avx2.h"

namespace rill::cpu::quantized::avx512_vnni {
namespace {

inline __m256i dot_u8_s8(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }
inline __m256i madd_accumulate(__m256i acc, __m256i pairs, __m256i scale) {
  return _mm256_dpwssd_epi32(acc, pairs, scale);
}

}  // namespace

#include "cpu_quant_tile.inc"

}  // namespace rill::cpu::quantized::avx512_vnni
