/* Helpers shared by the CUDA kernel files: element loads and stores through
   f32, the dtype error, and the grid of a grid-stride launch. */
#ifndef RILL_CUDA_KERNEL_COMMON_CUH
#define RILL_CUDA_KERNEL_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "cuda_backend.h"

namespace rill_cuda_kernels {

__device__ __forceinline__ float load_f32(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load_f32(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float load_f32(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store_f32(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store_f32(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void store_f32(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Blocks for a grid-stride loop over items: one per `threads` items, at most
   32 per SM (later items take further passes of the loop). */
inline unsigned grid_for(int64_t items, int threads, int sm_count) {
  const int64_t blocks = ceil_div(items, threads);
  const int64_t cap = static_cast<int64_t>(sm_count) * 32;
  return static_cast<unsigned>(blocks < cap ? blocks : cap);
}

inline rill_status bad_dtype(const char* op, rill_dtype dtype) {
  return rill_cuda_fail(RILL_ERROR_DTYPE, std::string("cuda: ") + op + ": dtype must be f32, f16 or bf16, given " +
                                              std::to_string(static_cast<int>(dtype)));
}

}  // namespace rill_cuda_kernels

#endif
