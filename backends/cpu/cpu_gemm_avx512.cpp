// The GEMM kernels in AVX-512F: twice the lanes of the AVX2 kernel and twice
// its registers, so a register tile covers four rows of a. This file alone is
// compiled with -mavx512f and is only called after cpu_kernels.cpp has checked
// that the CPU and the operating system support it; the other ops keep their
// AVX2 kernels.
// GCC 12's own AVX-512 intrinsics trip its maybe-uninitialized warning (their
// _mm512_undefined_*() placeholders initialise themselves), so it is off here.
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "cpu_convert.h"
#include "cpu_kernels.h"

namespace rill::cpu::avx512 {

namespace {

constexpr int64_t kWidth = 16;
using V = __m512;
// Rows of a per register tile: 4 x 4 accumulators, 4 weight vectors and one a
// vector take 21 of the 32 zmm registers.
constexpr int kGemmTileRows = 4;
// The panel kernel's tile: 12 rows of a x 2 vectors (32 output features) take
// 24 accumulators, 2 weight vectors and one broadcast element of a.
constexpr int kPanelRows = 12;
constexpr int kPanelVectors = 2;
constexpr int64_t kPanelCols = kPanelVectors * kWidth;

// The weight chunks are widened and transposed eight by eight in 256-bit
// registers.
#include "cpu_widen_avx2.inc"

template <rill_dtype DT>
inline V vload(const void* p, int64_t i) {
  if constexpr (DT == RILL_DTYPE_F32) {
    return _mm512_loadu_ps(static_cast<const float*>(p) + i);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(p) + i));
    if constexpr (DT == RILL_DTYPE_F16) {
      return _mm512_cvtph_ps(h);
    } else {
      // bf16 -> f32: widen to 32 bits and shift into the top half.
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
  }
}

// The kernel stores only f32 (its widened weight chunks).
template <rill_dtype DT>
inline void vstore(void* p, int64_t i, V v) {
  static_assert(DT == RILL_DTYPE_F32, "the AVX-512 GEMM stores f32 only");
  _mm512_storeu_ps(static_cast<float*>(p) + i, v);
}

// See the AVX2 kernels: keeps GCC from folding a weight load into every FMA.
inline void keep_in_register(V& v) { __asm__("" : "+v"(v)); }

inline V vset1(float f) { return _mm512_set1_ps(f); }
inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
// Halves added pairwise down to one lane, in a fixed order.
inline float vhsum(V v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v),
                                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

#include "cpu_gemm_kernels.inc"

}  // namespace

void gemm_rows(const GemmRowsArgs& args, int64_t block_begin, int64_t block_end) {
  gemm_rows_kernel(args, block_begin, block_end);
}

void gemm_panel(const GemmRowsArgs& args, int64_t block_begin, int64_t block_end) {
  gemm_panel_kernel(args, block_begin, block_end);
}

const int64_t kGemmPanelCols = kPanelCols;
const int64_t kGemmPanelRows = kPanelRows;

}  // namespace rill::cpu::avx512
