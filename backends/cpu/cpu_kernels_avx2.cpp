// The AVX2+FMA+F16C kernels. This file alone is compiled with those ISA flags
// and is only called after cpu_kernels.cpp has checked that the CPU has them.
#include <immintrin.h>
#include <math.h>

#include <cstdint>

#include "cpu_convert.h"
#include "cpu_kernels.h"

namespace rill::cpu::avx2 {

namespace {

constexpr const char* kIsaName = "AVX2+FMA+F16C";
constexpr int64_t kWidth = 8;
using V = __m256;
// Rows of a per GEMM register tile: 2 x 4 accumulators, 4 weight vectors and
// one a vector fill 13 of the 16 ymm registers.
constexpr int kGemmTileRows = 2;
// The panel kernel's tile: 6 rows of a x 2 vectors (16 output features) take
// 12 accumulators, 2 weight vectors and one broadcast element of a.
constexpr int kPanelRows = 6;
constexpr int kPanelVectors = 2;
constexpr int64_t kPanelCols = kPanelVectors * kWidth;

#include "cpu_widen_avx2.inc"

// f32 -> bf16 with round to nearest even; NaNs stay (quiet) NaNs.
inline __m128i f32x8_to_bf16(V v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
  const __m256i nan = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i bits = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, nan, is_nan), 16);
  // Pack the eight 32-bit lanes (values < 2^16) into 16 bits.
  const __m128i lo = _mm256_castsi256_si128(bits), hi = _mm256_extracti128_si256(bits, 1);
  return _mm_packus_epi32(lo, hi);
}

template <rill_dtype DT>
inline V vload(const void* p, int64_t i) {
  return widen8<DT>(p, i);
}

template <rill_dtype DT>
inline void vstore(void* p, int64_t i, V v) {
  if constexpr (DT == RILL_DTYPE_F32) {
    _mm256_storeu_ps(static_cast<float*>(p) + i, v);
  } else {
    __m128i* dst = reinterpret_cast<__m128i*>(static_cast<uint16_t*>(p) + i);
    if constexpr (DT == RILL_DTYPE_F16) {
      _mm_storeu_si128(dst, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    } else {
      _mm_storeu_si128(dst, f32x8_to_bf16(v));
    }
  }
}

// Converts once: the 16-bit value that is stored is the one widened back.
template <rill_dtype DT>
inline V vstore_rounded(void* p, int64_t i, V v) {
  if constexpr (DT == RILL_DTYPE_F32) {
    _mm256_storeu_ps(static_cast<float*>(p) + i, v);
    return v;
  } else {
    const __m128i h = DT == RILL_DTYPE_F16 ? _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                                           : f32x8_to_bf16(v);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint16_t*>(p) + i), h);
    return DT == RILL_DTYPE_F16 ? _mm256_cvtph_ps(h) : bf16x8_to_f32(h);
  }
}

// Non-temporal stores: a 32-byte f32 vector or a 16-byte vector of 16-bit
// values, each needing that alignment.
constexpr uintptr_t kStreamAlign = 32;
template <rill_dtype DT>
inline void vstream(void* p, int64_t i, V v) {
  if constexpr (DT == RILL_DTYPE_F32) {
    _mm256_stream_ps(static_cast<float*>(p) + i, v);
  } else {
    __m128i* dst = reinterpret_cast<__m128i*>(static_cast<uint16_t*>(p) + i);
    if constexpr (DT == RILL_DTYPE_F16) {
      _mm_stream_si128(dst, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    } else {
      _mm_stream_si128(dst, f32x8_to_bf16(v));
    }
  }
}
inline void vstream_fence() { _mm_sfence(); }

// An empty asm that claims to modify v in a vector register. GCC otherwise
// folds a weight load into every FMA that uses it, doubling the loads of the
// GEMM inner loop.
inline void keep_in_register(V& v) { __asm__("" : "+x"(v)); }

inline V vset1(float f) { return _mm256_set1_ps(f); }
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V vdiv(V a, V b) { return _mm256_div_ps(a, b); }
inline V vmin(V a, V b) { return _mm256_min_ps(a, b); }
inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
inline V vround(V v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline V vfloor(V v) { return _mm256_floor_ps(v); }
inline V vpow2(V n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline float vhsum(V v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

struct Acc {
  __m256d lo, hi;
};
inline Acc acc_zero() { return Acc{_mm256_setzero_pd(), _mm256_setzero_pd()}; }
inline void acc_sq(Acc& acc, V v) {
  const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
  const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
  acc.lo = _mm256_fmadd_pd(lo, lo, acc.lo);
  acc.hi = _mm256_fmadd_pd(hi, hi, acc.hi);
}
inline void acc_sum(Acc& acc, V v) {
  acc.lo = _mm256_add_pd(acc.lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  acc.hi = _mm256_add_pd(acc.hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}
inline double acc_total(const Acc& acc) {
  const __m256d s = _mm256_add_pd(acc.lo, acc.hi);
  const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
  return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}

}  // namespace

#include "cpu_kernels.inc"

}  // namespace rill::cpu::avx2
