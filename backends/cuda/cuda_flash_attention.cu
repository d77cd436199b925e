/* Prefill attention on tensor cores (sm_80 and later; sm_90 runs the same
 * code): FlashAttention-2's tiling, with `mma.sync.m16n8k16` in inline PTX.
 *
 * One block of 4 warps per (sequence, query head, tile of 64 queries); each
 * warp owns 16 of the tile's query rows. The block walks the tile's visible
 * key slots in tiles of kKeyTile rows of K and V staged in shared memory:
 * S = Q K^T on tensor cores (f16 or bf16 inputs, f32 sums), scaled,
 * soft-capped and masked in f32, an online softmax per row in f32, then
 * O += P V on tensor cores with P rounded to the input dtype. The row sums
 * add the rounded P, so the weights that multiply V are the ones that
 * normalise the row.
 *
 * Inline PTX rather than nvcuda::wmma: the softmax, the masks and the reuse
 * of S's accumulators as P's A operand need to know which row and column
 * each register holds, which the PTX ISA documents for mma.sync's fragments
 * and wmma leaves opaque (and wmma has no m16n8k16 shape).
 *
 * Built, never run on a GPU. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "cuda_backend.h"
#include "cuda_kernel_common.cuh"

namespace {

using namespace rill_cuda_kernels;

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 16;                    // the M of m16n8k16
constexpr int kQueryTile = kWarps * kRowsPerWarp;  // 64
constexpr int kSharedPad = 8;  // halves per shared row past head_dim: rows 16 bytes apart in banks

/* Key rows per tile: 32 for head_dim 256 keeps Q, K and V tiles in 64 KiB of
   shared memory and each thread's accumulators in registers. */
template <int D>
constexpr int kKeyTile = D == 256 ? 32 : 64;

struct FlashShape {
  int64_t queries, q_heads, slots, kv_heads;
  int64_t group;  // q_heads / kv_heads
  float scale;
  int64_t window;  // 0 = none
  float softcap;   // 0 = off
};

template <typename T>
struct MmaType;
template <>
struct MmaType<__half> {
  using pair = __half2;
  static __device__ __forceinline__ pair make(float a, float b) { return __floats2half2_rn(a, b); }
  static __device__ __forceinline__ float2 split(pair p) { return __half22float2(p); }
};
template <>
struct MmaType<__nv_bfloat16> {
  using pair = __nv_bfloat162;
  static __device__ __forceinline__ pair make(float a, float b) { return __floats2bfloat162_rn(a, b); }
  static __device__ __forceinline__ float2 split(pair p) { return __bfloat1622float2(p); }
};

/* d += a b for one 16x8 tile: a 16x16 (row-major fragment, 4 registers of
   two elements), b 16x8 (column-major fragment, 2 registers), d 16x8 f32.
   Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), with
   g = lane / 4 and c = 2 * (lane % 4):
     a0 (g, c..c+1)  a1 (g+8, c..c+1)  a2 (g, c+8..c+9)  a3 (g+8, c+8..c+9)
     b0 (k c..c+1, n g)  b1 (k c+8..c+9, n g)
     d0 d1 (g, c..c+1)  d2 d3 (g+8, c..c+1) */
template <typename T>
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
template <>
__device__ __forceinline__ void mma_16x8x16<__half>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void mma_16x8x16<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                          const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <typename T>
__device__ __forceinline__ uint32_t pair_bits(const T* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}
template <typename T>
__device__ __forceinline__ uint32_t pack_bits(typename MmaType<T>::pair p) {
  return *reinterpret_cast<uint32_t*>(&p);
}
/* Two elements of different rows as one register, the first in the low half. */
template <typename T>
__device__ __forceinline__ uint32_t gather_bits(const T* first, const T* second) {
  const uint32_t lo = *reinterpret_cast<const uint16_t*>(first);
  const uint32_t hi = *reinterpret_cast<const uint16_t*>(second);
  return lo | (hi << 16);
}

/* rows rows of D elements from src (row r at src + r * src_stride) into
   shared memory (row stride D + kSharedPad), in 16-byte packs; rows past
   valid are zeros, so that masked slots multiply 0, never a stale NaN. */
template <typename T, int D>
__device__ __forceinline__ void stage_rows(T* dst, const T* src, int64_t src_stride, int rows, int valid) {
  constexpr int kVec = kWideVec<T>;
  constexpr int kPacksPerRow = D / kVec;
  for (int i = static_cast<int>(threadIdx.x); i < rows * kPacksPerRow; i += kWarps * 32) {
    const int r = i / kPacksPerRow, p = i % kPacksPerRow;
    Pack<T, kVec> pack;
    if (r < valid) {
      pack = load_pack<T, kVec>(src + r * src_stride, p, true);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) pack.v[e] = from_f32<T>(0.0f);
    }
    store_pack<T, kVec>(dst + r * (D + kSharedPad), p, pack, true);
  }
}

/* Grid: x = query tile, y = query head, z = sequence. */
template <typename T, int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash_attention_kernel(const T* q, const T* k, const T* v, const int32_t* kv_lengths, T* out, FlashShape s) {
  constexpr int kKeys = kKeyTile<D>;
  constexpr int kStride = D + kSharedPad;
  constexpr int kScoreTiles = kKeys / 8;  // n-tiles of S per warp
  constexpr int kOutTiles = D / 8;        // n-tiles of O per warp
  using M = MmaType<T>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* q_tile = reinterpret_cast<T*>(shared_bytes);  // [kQueryTile][kStride]
  T* k_tile = q_tile + kQueryTile * kStride;        // [kKeys][kStride]
  T* v_tile = k_tile + kKeys * kStride;             // [kKeys][kStride]

  const int64_t b = blockIdx.z, head = blockIdx.y, kvh = head / s.group;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kQueryTile;
  const int64_t length = kv_lengths[b];
  const int64_t offset = length - s.queries;  // query t sits at position offset + t
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, c = 2 * (lane % 4);

  const int64_t q_stride = s.q_heads * D, kv_stride = s.kv_heads * D;
  const int tile_queries = static_cast<int>(min(static_cast<int64_t>(kQueryTile), s.queries - t0));
  stage_rows<T, D>(q_tile, q + ((b * s.queries + t0) * s.q_heads + head) * D, q_stride, kQueryTile, tile_queries);

  // The slots any query of the tile sees: from the first query's window
  // start to the last query's position.
  const int64_t first_position = offset + t0, last_position = offset + t0 + tile_queries - 1;
  const int64_t lo = s.window > 0 && first_position + 1 > s.window ? first_position + 1 - s.window : 0;
  const int64_t hi = last_position + 1;

  // This thread's rows: g and g + 8 of the warp's 16 (index 0 and 1 below).
  int64_t row_position[2];
  row_position[0] = first_position + warp * kRowsPerWarp + g;
  row_position[1] = row_position[0] + 8;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
  float acc[kOutTiles][4];
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[n][i] = 0.0f;
  }
  const T* warp_q = q_tile + warp * kRowsPerWarp * kStride;

  for (int64_t j0 = lo; j0 < hi; j0 += kKeys) {
    const int valid = static_cast<int>(min(static_cast<int64_t>(kKeys), hi - j0));
    __syncthreads();  // the previous tile's K and V are no longer read
    const int64_t kv_first = (b * s.slots + j0) * s.kv_heads + kvh;
    stage_rows<T, D>(k_tile, k + kv_first * D, kv_stride, kKeys, valid);
    stage_rows<T, D>(v_tile, v + kv_first * D, kv_stride, kKeys, valid);
    __syncthreads();

    // S = Q K^T for the warp's 16 rows and the tile's keys.
    float score[kScoreTiles][4];
#pragma unroll
    for (int n = 0; n < kScoreTiles; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) score[n][i] = 0.0f;
    }
#pragma unroll
    for (int d0 = 0; d0 < D; d0 += 16) {
      const uint32_t a[4] = {pair_bits(warp_q + g * kStride + d0 + c), pair_bits(warp_q + (g + 8) * kStride + d0 + c),
                             pair_bits(warp_q + g * kStride + d0 + c + 8),
                             pair_bits(warp_q + (g + 8) * kStride + d0 + c + 8)};
#pragma unroll
      for (int n = 0; n < kScoreTiles; ++n) {
        const T* key = k_tile + (n * 8 + g) * kStride + d0 + c;
        const uint32_t bk[2] = {pair_bits(key), pair_bits(key + 8)};
        mma_16x8x16<T>(score[n], a, bk);
      }
    }

    // Scale, soft-cap and mask in f32; the new row maxima over the quad of
    // lanes that share a row.
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < kScoreTiles; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = i / 2;
        const int64_t slot = j0 + n * 8 + c + (i % 2);
        float x = score[n][i] * s.scale;
        if (s.softcap > 0.0f) x = s.softcap * tanhf(x / s.softcap);
        const bool visible = slot <= row_position[r] && (s.window <= 0 || slot > row_position[r] - s.window);
        score[n][i] = visible ? x : -INFINITY;
        tile_max[r] = fmaxf(tile_max[r], score[n][i]);
      }
    }
    float correction[2], base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float new_max = fmaxf(row_max[r], tile_max[r]);
      // A row that has seen no visible slot yet (or a query past the last)
      // keeps max -inf: exponents are then taken against 0, giving 0.
      base[r] = new_max == -INFINITY ? 0.0f : new_max;
      correction[r] = expf(row_max[r] - base[r]);  // 0 while row_max is -inf
      row_max[r] = new_max;
      row_sum[r] *= correction[r];
    }
#pragma unroll
    for (int n = 0; n < kOutTiles; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[n][i] *= correction[i / 2];
    }

    // P = exp(S - max) rounded to T: two adjacent n-tiles of S form one A
    // fragment of P (keys 16m..16m+15), as the fragment layouts line up.
#pragma unroll
    for (int m = 0; m < kScoreTiles / 2; ++m) {
      uint32_t a[4];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float* s_pair = &score[2 * m + half][2 * r];
          const typename M::pair p = M::make(expf(s_pair[0] - base[r]), expf(s_pair[1] - base[r]));
          const float2 rounded = M::split(p);
          row_sum[r] += rounded.x + rounded.y;
          a[2 * half + r] = pack_bits<T>(p);
        }
      }
      const int key0 = 16 * m;
#pragma unroll
      for (int n = 0; n < kOutTiles; ++n) {
        const T* value = v_tile + (key0 + c) * kStride + n * 8 + g;
        const uint32_t bv[2] = {gather_bits(value, value + kStride), gather_bits(value + 8 * kStride, value + 9 * kStride)};
        mma_16x8x16<T>(acc[n], a, bv);
      }
    }
  }

  // Each row's sum over its quad, then out = acc / sum for the tile's queries.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t t = t0 + warp * kRowsPerWarp + g + 8 * r;
    if (t >= s.queries) continue;
    const float inverse = 1.0f / row_sum[r];  // every query sees its own slot: the sum is positive
    T* out_row = out + ((b * s.queries + t) * s.q_heads + head) * D;
#pragma unroll
    for (int n = 0; n < kOutTiles; ++n) {
      *reinterpret_cast<typename M::pair*>(out_row + n * 8 + c) =
          M::make(acc[n][2 * r] * inverse, acc[n][2 * r + 1] * inverse);
    }
  }
}

template <typename T, int D>
rill_status launch_flash(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                         const rill_backend_tensor* v, const int32_t* kv_lengths, const FlashShape& s,
                         const rill_backend_tensor* out) {
  const std::size_t shared = sizeof(T) * static_cast<std::size_t>((kQueryTile + 2 * kKeyTile<D>) * (D + kSharedPad));
  rill_status status = rill_cuda_check(
      cudaFuncSetAttribute(flash_attention_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(shared)),
      "cudaFuncSetAttribute (flash attention shared memory)");
  if (status != RILL_OK) return status;
  const dim3 grid(static_cast<unsigned>(ceil_div(q->shape[1], kQueryTile)), static_cast<unsigned>(s.q_heads),
                  static_cast<unsigned>(q->shape[0]));
  flash_attention_kernel<T, D><<<grid, kWarps * 32, shared, ctx->stream>>>(
      static_cast<const T*>(rill_cuda_data(q)), static_cast<const T*>(rill_cuda_data(k)),
      static_cast<const T*>(rill_cuda_data(v)), kv_lengths, static_cast<T*>(rill_cuda_data(out)), s);
  return rill_cuda_check(cudaGetLastError(), "flash attention kernel launch");
}

template <typename T>
rill_status launch_flash_dtype(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                               const rill_backend_tensor* v, const int32_t* kv_lengths, const FlashShape& s,
                               const rill_backend_tensor* out) {
  switch (q->shape[3]) {
    case 64: return launch_flash<T, 64>(ctx, q, k, v, kv_lengths, s, out);
    case 128: return launch_flash<T, 128>(ctx, q, k, v, kv_lengths, s, out);
    default: return launch_flash<T, 256>(ctx, q, k, v, kv_lengths, s, out);  // the caller checked head_dim
  }
}

}  // namespace

bool rill_cuda_flash_attention_applies(const rill_backend_tensor* q, const rill_backend_tensor* k,
                                       const rill_backend_tensor* v, const rill_backend_tensor* out) {
  const int64_t head_dim = q->shape[3];
  const bool sixteen_bit = q->dtype == RILL_DTYPE_F16 || q->dtype == RILL_DTYPE_BF16;
  return sixteen_bit && q->shape[1] >= kRillCudaFlashMinQueries &&
         (head_dim == 64 || head_dim == 128 || head_dim == 256) && q->shape[2] <= 65535 && q->shape[0] <= 65535 &&
         aligned16(rill_cuda_data(q)) && aligned16(rill_cuda_data(k)) && aligned16(rill_cuda_data(v)) &&
         aligned16(rill_cuda_data(out));
}

rill_status rill_cuda_flash_attention(rill_backend_context* ctx, const rill_backend_tensor* q,
                                      const rill_backend_tensor* k, const rill_backend_tensor* v,
                                      const int32_t* device_kv_lengths, float scale, int64_t window, float softcap,
                                      const rill_backend_tensor* out) {
  FlashShape s{};
  s.queries = q->shape[1];
  s.q_heads = q->shape[2];
  s.slots = k->shape[1];
  s.kv_heads = k->shape[2];
  s.group = s.q_heads / s.kv_heads;
  s.scale = scale;
  s.window = window;
  s.softcap = softcap;
  if (q->dtype == RILL_DTYPE_F16) return launch_flash_dtype<__half>(ctx, q, k, v, device_kv_lengths, s, out);
  return launch_flash_dtype<__nv_bfloat16>(ctx, q, k, v, device_kv_lengths, s, out);
}
