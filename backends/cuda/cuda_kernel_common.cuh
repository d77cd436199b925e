/* Helpers shared by the CUDA kernel files: element loads and stores through
   f32, packs of elements moved as one 16-byte access, the dtype error, and
   the grid of a grid-stride launch. */
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

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/* VEC consecutive elements, loaded and stored as one access. */
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};

/* Pack pack_index of base: one access when base is 16-byte aligned (wide),
   else VEC element accesses. Either way the same values arrive. */
template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_pack(const T* base, int64_t pack_index, bool wide) {
  if constexpr (VEC > 1) {
    if (!wide) {
      Pack<T, VEC> p;
#pragma unroll
      for (int j = 0; j < VEC; ++j) p.v[j] = base[pack_index * VEC + j];
      return p;
    }
  }
  return reinterpret_cast<const Pack<T, VEC>*>(base)[pack_index];
}
template <typename T, int VEC>
__device__ __forceinline__ void store_pack(T* base, int64_t pack_index, const Pack<T, VEC>& p, bool wide) {
  if constexpr (VEC > 1) {
    if (!wide) {
#pragma unroll
      for (int j = 0; j < VEC; ++j) base[pack_index * VEC + j] = p.v[j];
      return;
    }
  }
  reinterpret_cast<Pack<T, VEC>*>(base)[pack_index] = p;
}
template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_pack_or(const T* base, int64_t pack_index, bool wide, float fallback) {
  if (base) return load_pack<T, VEC>(base, pack_index, wide);
  Pack<T, VEC> p;
#pragma unroll
  for (int j = 0; j < VEC; ++j) p.v[j] = from_f32<T>(fallback);
  return p;
}

/* Elements in one 16-byte pack. */
template <typename T>
constexpr int kWideVec = 16 / static_cast<int>(sizeof(T));

/* Whether an operand can be moved in 16-byte accesses (NULL counts as
   aligned). Views carry byte offsets, so this is decided per call and per
   operand; it only picks how a pack is moved, never the arithmetic. */
inline bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

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
