/* Decoder-layer ops (backend interface version 2): RoPE, causal GQA attention
 * against a KV cache, and plain or gated activations.
 *
 * These favour plain, checkable code over speed: one thread per rotated pair
 * (cos and sin from a table made once per token),
 * for attention one block per query position and KV head, serving up to 8
 * query heads of its GQA group from each K/V row it loads (16-byte loads
 * where the rows allow; online softmax per warp, warps merged at the end; in
 * decode, where these blocks alone cannot fill the GPU, also one block per
 * chunk of the KV cache, the chunks merged by a second kernel; prefill in
 * f16/bf16 goes to the tensor-core kernel of cuda_flash_attention.cu),
 * one thread per 16-byte pack of elements for activations (per element where
 * an operand is not 16-byte aligned), one per element for (interface
 * version 5) the clamp. f32 math throughout;
 * RoPE angles in double like the CPU backend, so large positions agree.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda_backend.h"
#include "cuda_kernel_common.cuh"

namespace {

using namespace rill_cuda_kernels;

/* ---- RoPE --------------------------------------------------------------- */

/* table[token * half + i] = (cos, sin) of positions[token] * inv_freq[i],
   scaled by factor: once per token, not once per head. The angle is formed
   and reduced to [-pi, pi] in double, so large positions keep the bits the
   CPU backend's double angle has; the sine and cosine of the reduced angle
   are then taken in f32 (a double sincos costs 64x more on GPUs other than
   the A100/H100 class). */
__global__ void rope_table_kernel(const int32_t* positions, const double* inv_freq, float factor, int64_t tokens,
                                  int half, float2* table) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (int64_t token = blockIdx.y; token < tokens; token += gridDim.y) {
    const double position = static_cast<double>(positions[token]);
    for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < half;
         i += static_cast<int>(gridDim.x * blockDim.x)) {
      const double angle = position * inv_freq[i];
      const float reduced = static_cast<float>(angle - rint(angle / kTwoPi) * kTwoPi);
      float sin_f, cos_f;
      sincosf(reduced, &sin_f, &cos_f);
      table[token * half + i] = make_float2(factor * cos_f, factor * sin_f);
    }
  }
}

/* x: [tokens, heads, head_dim], rotated with rope_table_kernel's table.
   Threads (x, y) of a block take pair x of heads y, y + blockDim.y, ... of
   the tokens blockIdx.y, blockIdx.y + gridDim.y, ...: no index is divided. */
template <typename T>
__global__ void rope_kernel(T* x, const float2* table, int64_t tokens, int heads, int head_dim, int half) {
  const int head_stride = static_cast<int>(gridDim.x * blockDim.y);
  for (int64_t token = blockIdx.y; token < tokens; token += gridDim.y) {
    const float2* token_table = table + token * half;
    for (int head = static_cast<int>(blockIdx.x * blockDim.y + threadIdx.y); head < heads; head += head_stride) {
      T* row = x + (token * heads + head) * head_dim;
      for (int i = static_cast<int>(threadIdx.x); i < half; i += static_cast<int>(blockDim.x)) {
        const float2 cos_sin = token_table[i];
        const float c = cos_sin.x, s = cos_sin.y;
        const float x1 = load_f32(row, i);
        const float x2 = load_f32(row, i + half);
        store_f32(row, i, x1 * c - x2 * s);
        store_f32(row, i + half, x2 * c + x1 * s);
      }
    }
  }
}

/* ---- Attention ---------------------------------------------------------- */

constexpr int kAttentionWarps = 8;
constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerLane = kMaxHeadDim / 32;
/* Query heads of one GQA group that share a block, and so each K and V row
   the block loads. A larger group (MQA's) takes several blocks; the bound
   keeps each lane's accumulators (heads x kDimsPerLane floats) in registers. */
constexpr int kHeadsPerBlock = 8;

struct AttentionShape {
  int64_t batch, queries, q_heads, slots, kv_heads, head_dim;
  int64_t group;             // q_heads / kv_heads: query heads per KV head
  int64_t blocks_per_group;  // ceil(group / kHeadsPerBlock)
  float scale;
  int64_t window;  // 0 = none: a query sees its last `window` slots
  float softcap;   // 0 = off: logit l becomes softcap * tanh(l / softcap)
  /* Split-KV (gridDim.y > 1 splits): split i walks the query's visible slots
     from i * chunk to (i + 1) * chunk and leaves its max, sum and unscaled
     value sum in partials, [query row][split][2 + head_dim];
     attention_merge_kernel combines them. */
  int64_t chunk;
  float* partials;
};

/* Lane l's share of a K or V row: packs l, l + 32, ... of VEC elements, as
   f32 (0 past head_dim). With VEC > 1 each pack is one 16-byte load (the
   host checked the row's alignment). */
template <typename T, int VEC>
__device__ __forceinline__ void load_lane_share(const T* row, int64_t packs, int lane, float (&share)[kDimsPerLane]) {
#pragma unroll
  for (int c = 0; c < kDimsPerLane / VEC; ++c) {
    const int64_t p = lane + 32 * c;
    if (p < packs) {
      const Pack<T, VEC> pack = load_pack<T, VEC>(row, p, true);
#pragma unroll
      for (int e = 0; e < VEC; ++e) share[c * VEC + e] = to_f32(pack.v[e]);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) share[c * VEC + e] = 0.0f;
    }
  }
}

/* One block per (b, t, KV head, up to kHeadsPerBlock of its query heads) in
   x, and per split of the visible slots in y. Each warp walks a strided
   subset of the slots; a slot's K and V rows are loaded once, in VEC-element
   packs, and serve every query head of the block, each with its own running
   max, sum and weighted value sum (online softmax). The warps' results are
   then rescaled to a common max and added, warp after warp (a fixed order:
   the same inputs give the same bits). */
template <typename T, int VEC>
__global__ void __launch_bounds__(kAttentionWarps * 32)
    attention_kernel(const T* q, const T* k, const T* v, const int32_t* kv_lengths, T* out, AttentionShape s) {
  constexpr int kPacksPerLane = kDimsPerLane / VEC;
  extern __shared__ float shared[];
  float* q_rows = shared;                                       // [kHeadsPerBlock][head_dim], scaled
  float* merged = q_rows + kHeadsPerBlock * s.head_dim;         // [kHeadsPerBlock][head_dim]
  float* warp_max = merged + kHeadsPerBlock * s.head_dim;       // [warps][kHeadsPerBlock]
  float* warp_sum = warp_max + kAttentionWarps * kHeadsPerBlock;  // [warps][kHeadsPerBlock]

  int64_t index = blockIdx.x;
  const int64_t part = index % s.blocks_per_group;
  index /= s.blocks_per_group;
  const int64_t kvh = index % s.kv_heads;
  index /= s.kv_heads;
  const int64_t t = index % s.queries;
  const int64_t b = index / s.queries;
  const int64_t first_head = kvh * s.group + part * kHeadsPerBlock;
  const int heads = static_cast<int>(min(static_cast<int64_t>(kHeadsPerBlock), s.group - part * kHeadsPerBlock));
  const int64_t visible = static_cast<int64_t>(kv_lengths[b]) - s.queries + t + 1;  // slots 0..position
  const int64_t first = s.window > 0 && visible > s.window ? visible - s.window : 0;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const bool split = gridDim.y > 1;
  const int64_t begin = split ? first + static_cast<int64_t>(blockIdx.y) * s.chunk : first;
  const int64_t end = split && begin + s.chunk < visible ? begin + s.chunk : visible;

  // The block's query heads are consecutive rows of q.
  const int64_t q_offset = ((b * s.queries + t) * s.q_heads + first_head) * s.head_dim;
  for (int64_t i = threadIdx.x; i < heads * s.head_dim; i += blockDim.x) {
    q_rows[i] = load_f32(q, q_offset + i) * s.scale;
    merged[i] = 0.0f;
  }
  __syncthreads();

  const int64_t packs = s.head_dim / VEC;  // the host picks VEC dividing head_dim
  float running_max[kHeadsPerBlock], running_sum[kHeadsPerBlock];
  float acc[kHeadsPerBlock][kDimsPerLane];
#pragma unroll
  for (int h = 0; h < kHeadsPerBlock; ++h) {
    running_max[h] = -INFINITY;
    running_sum[h] = 0.0f;
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) acc[h][i] = 0.0f;
  }

  for (int64_t j = begin + warp; j < end; j += kAttentionWarps) {
    const int64_t kv_offset = ((b * s.slots + j) * s.kv_heads + kvh) * s.head_dim;
    float share[kDimsPerLane];
    load_lane_share<T, VEC>(k + kv_offset, packs, lane, share);
    float p[kHeadsPerBlock];
#pragma unroll
    for (int h = 0; h < kHeadsPerBlock; ++h) {
      if (h >= heads) break;
      const float* q_row = q_rows + h * s.head_dim;
      float partial = 0.0f;
#pragma unroll
      for (int c = 0; c < kPacksPerLane; ++c) {
        const int64_t d = (lane + 32 * c) * static_cast<int64_t>(VEC);
        if (d < s.head_dim) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) partial += q_row[d + e] * share[c * VEC + e];
        }
      }
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) partial += __shfl_xor_sync(0xffffffffu, partial, offset);
      const float score = s.softcap > 0.0f ? s.softcap * tanhf(partial / s.softcap) : partial;
      const float new_max = fmaxf(running_max[h], score);
      const float correction = expf(running_max[h] - new_max);  // 0 on the first slot
      p[h] = expf(score - new_max);
      running_sum[h] = running_sum[h] * correction + p[h];
      running_max[h] = new_max;
#pragma unroll
      for (int i = 0; i < kDimsPerLane; ++i) acc[h][i] *= correction;
    }
    load_lane_share<T, VEC>(v + kv_offset, packs, lane, share);
#pragma unroll
    for (int h = 0; h < kHeadsPerBlock; ++h) {
      if (h >= heads) break;
#pragma unroll
      for (int i = 0; i < kDimsPerLane; ++i) acc[h][i] += p[h] * share[i];
    }
  }

  if (lane == 0) {
#pragma unroll
    for (int h = 0; h < kHeadsPerBlock; ++h) {
      warp_max[warp * kHeadsPerBlock + h] = running_max[h];
      warp_sum[warp * kHeadsPerBlock + h] = running_sum[h];
    }
  }
  __syncthreads();

  // Each head's largest max over the warps; a warp that saw no slot has max
  // -inf and sum 0 and contributes nothing. A split past the query's last
  // slot saw none at all (and leaves max -inf, sum 0, values 0 for the merge).
  float block_max[kHeadsPerBlock];
#pragma unroll
  for (int h = 0; h < kHeadsPerBlock; ++h) {
    block_max[h] = -INFINITY;
    for (int w = 0; w < kAttentionWarps; ++w) block_max[h] = fmaxf(block_max[h], warp_max[w * kHeadsPerBlock + h]);
  }
  for (int w = 0; w < kAttentionWarps; ++w) {
    if (warp == w) {
#pragma unroll
      for (int h = 0; h < kHeadsPerBlock; ++h) {
        if (h >= heads || running_max[h] == -INFINITY) continue;
        const float rescale = expf(running_max[h] - block_max[h]);
#pragma unroll
        for (int c = 0; c < kPacksPerLane; ++c) {
          const int64_t d = (lane + 32 * c) * static_cast<int64_t>(VEC);
          if (d < s.head_dim) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) merged[h * s.head_dim + d + e] += acc[h][c * VEC + e] * rescale;
          }
        }
      }
    }
    __syncthreads();
  }

  for (int64_t i = threadIdx.x; i < heads * s.head_dim; i += blockDim.x) {
    const int h = static_cast<int>(i / s.head_dim);
    const int64_t d = i - h * s.head_dim;
    float head_max = -INFINITY;
    for (int w = 0; w < kAttentionWarps; ++w) head_max = fmaxf(head_max, warp_max[w * kHeadsPerBlock + h]);
    float total = 0.0f;
    if (head_max != -INFINITY) {
      for (int w = 0; w < kAttentionWarps; ++w) {
        total += warp_sum[w * kHeadsPerBlock + h] * expf(warp_max[w * kHeadsPerBlock + h] - head_max);
      }
    }
    if (split) {
      const int64_t row = (b * s.queries + t) * s.q_heads + first_head + h;
      float* partial = s.partials + (row * gridDim.y + blockIdx.y) * (2 + s.head_dim);
      if (d == 0) {
        partial[0] = head_max;
        partial[1] = total;
      }
      partial[2 + d] = merged[i];
    } else {
      store_f32(out, q_offset + i, merged[i] / total);
    }
  }
}

/* out row r (one per (b, t, query head)) from the splits' partial results:
   each rescaled to the largest max and added, as the warps are above. */
template <typename T>
__global__ void attention_merge_kernel(const float* partials, int splits, int64_t head_dim, T* out) {
  const float* row = partials + static_cast<int64_t>(blockIdx.x) * splits * (2 + head_dim);
  float global_max = -INFINITY;
  for (int i = 0; i < splits; ++i) global_max = fmaxf(global_max, row[i * (2 + head_dim)]);
  float total = 0.0f;  // split 0 always saw a slot, so global_max is finite
  for (int i = 0; i < splits; ++i) total += row[i * (2 + head_dim) + 1] * expf(row[i * (2 + head_dim)] - global_max);
  const float inv_total = 1.0f / total;
  for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float value = 0.0f;
    for (int i = 0; i < splits; ++i) {
      value += row[i * (2 + head_dim) + 2 + d] * expf(row[i * (2 + head_dim)] - global_max);
    }
    store_f32(out, static_cast<int64_t>(blockIdx.x) * head_dim + d, value * inv_total);
  }
}

/* ---- Activations -------------------------------------------------------- */

__device__ __forceinline__ float activate(rill_act_fn fn, float x) {
  switch (fn) {
    case RILL_ACT_SILU:
      return x / (1.0f + expf(-x));
    case RILL_ACT_GELU:
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case RILL_ACT_GELU_TANH:
      return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    default:  // RILL_ACT_RELU; the host rejects other values
      return x > 0.0f ? x : 0.0f;
  }
}

/* out = fn(x) * up, or fn(x) without up. The elements go in packs of VEC
   (16 bytes when every operand is 16-byte aligned, else single elements),
   the count % VEC elements past the last pack one by one; either way each
   element's arithmetic is the same. out may alias x or up: each element is
   read before it is written, by the same thread. */
template <typename T, int VEC>
__global__ void activation_kernel(rill_act_fn fn, const T* x, const T* up, T* out, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t packs = count / VEC;
  for (int64_t p = first; p < packs; p += stride) {
    const Pack<T, VEC> xs = load_pack<T, VEC>(x, p, true);
    const Pack<T, VEC> ups = load_pack_or<T, VEC>(up, p, true, 1.0f);
    Pack<T, VEC> ys;
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      float y = activate(fn, to_f32(xs.v[j]));
      if (up) y *= to_f32(ups.v[j]);
      ys.v[j] = from_f32<T>(y);
    }
    store_pack<T, VEC>(out, p, ys, true);
  }
  for (int64_t i = packs * VEC + first; i < count; i += stride) {
    float y = activate(fn, load_f32(x, i));
    if (up) y *= load_f32(up, i);
    store_f32(out, i, y);
  }
}

/* out = x clamped to [lo, hi]; a NaN fails both tests and stays NaN
   (torch.clamp). out may alias x. */
template <typename T>
__global__ void clamp_kernel(const T* x, float lo, float hi, T* out, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    float y = load_f32(x, i);
    y = y < lo ? lo : y;
    store_f32(out, i, y > hi ? hi : y);
  }
}

/* ---- Host side ---------------------------------------------------------- */

/* Blocks of 256 threads: a warp-multiple of them across a head's pairs (up
   to 128), the rest across heads; up to 65535 tokens in y, then further
   passes of the token loop. */
constexpr int64_t kMaxGridY = 65535;
template <typename T>
void launch_rope(rill_backend_context* ctx, const rill_backend_tensor* x, const float2* table, int64_t half) {
  const int64_t tokens = x->shape[0], heads = x->shape[1], head_dim = x->shape[2];
  const int64_t threads_x = std::min<int64_t>(128, ceil_div(half, 32) * 32);
  const int64_t threads_y = 256 / threads_x;
  const dim3 grid(static_cast<unsigned>(ceil_div(heads, threads_y)), static_cast<unsigned>(std::min(tokens, kMaxGridY)));
  rope_kernel<T><<<grid, dim3(static_cast<unsigned>(threads_x), static_cast<unsigned>(threads_y)), 0, ctx->stream>>>(
      static_cast<T*>(rill_cuda_data(x)), table, tokens, static_cast<int>(heads), static_cast<int>(head_dim),
      static_cast<int>(half));
}

/* Blocks of attention_kernel: one per (b, t, KV head, kHeadsPerBlock of its
   query heads). */
int64_t attention_blocks(const AttentionShape& s) { return s.batch * s.queries * s.kv_heads * s.blocks_per_group; }

template <typename T, int VEC>
void launch_attention_vec(rill_backend_context* ctx, const T* q, const T* k, const T* v, const int32_t* kv_lengths,
                          int64_t splits, const AttentionShape& s, T* out) {
  const std::size_t shared_bytes =
      sizeof(float) * static_cast<std::size_t>(2 * kHeadsPerBlock * s.head_dim + 2 * kAttentionWarps * kHeadsPerBlock);
  attention_kernel<T, VEC><<<dim3(static_cast<unsigned>(attention_blocks(s)), static_cast<unsigned>(splits)),
                             kAttentionWarps * 32, shared_bytes, ctx->stream>>>(q, k, v, kv_lengths, out, s);
}

/* K and V move in 16-byte packs when every row of them starts 16-byte
   aligned (head_dim a multiple of the pack, both bases aligned), else
   element by element; either way the arithmetic is the same. */
template <typename T>
void launch_attention(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                      const rill_backend_tensor* v, const int32_t* kv_lengths, int64_t splits,
                      const AttentionShape& s, const rill_backend_tensor* out) {
  const T* q_data = static_cast<const T*>(rill_cuda_data(q));
  const T* k_data = static_cast<const T*>(rill_cuda_data(k));
  const T* v_data = static_cast<const T*>(rill_cuda_data(v));
  T* out_data = static_cast<T*>(rill_cuda_data(out));
  if (s.head_dim % kWideVec<T> == 0 && aligned16(k_data) && aligned16(v_data)) {
    launch_attention_vec<T, kWideVec<T>>(ctx, q_data, k_data, v_data, kv_lengths, splits, s, out_data);
  } else {
    launch_attention_vec<T, 1>(ctx, q_data, k_data, v_data, kv_lengths, splits, s, out_data);
  }
  if (splits > 1) {
    const unsigned rows = static_cast<unsigned>(s.batch * s.queries * s.q_heads);
    attention_merge_kernel<T><<<rows, 128, 0, ctx->stream>>>(s.partials, static_cast<int>(splits), s.head_dim, out_data);
  }
}

/* Splits of the KV walk: when the blocks of one walk each (attention_blocks)
   are fewer than two per SM (decode), the visible slots are split into
   chunks of at least kMinSlotsPerSplit until there are, at most kMaxSplits.
   span: the most slots one query sees. */
constexpr int64_t kMinSlotsPerSplit = 256;
constexpr int64_t kMaxSplits = 64;
int64_t attention_splits(int64_t blocks, int64_t span, int sm_count) {
  const int64_t wanted = 2 * static_cast<int64_t>(sm_count);
  if (blocks >= wanted) return 1;
  int64_t splits = ceil_div(span, kMinSlotsPerSplit);
  if (splits > ceil_div(wanted, blocks)) splits = ceil_div(wanted, blocks);
  return splits < kMaxSplits ? splits : kMaxSplits;
}

int64_t element_count(const rill_backend_tensor* t) {
  int64_t count = 1;
  for (int32_t i = 0; i < t->ndim; ++i) count *= t->shape[i];
  return count;
}

template <typename T>
void launch_activation(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                       const rill_backend_tensor* up, const rill_backend_tensor* out) {
  const int64_t count = element_count(x);
  const T* x_data = static_cast<const T*>(rill_cuda_data(x));
  const T* up_data = static_cast<const T*>(rill_cuda_data(up));
  T* out_data = static_cast<T*>(rill_cuda_data(out));
  constexpr int kThreads = 256;
  if (aligned16(x_data) && aligned16(up_data) && aligned16(out_data)) {
    constexpr int V = kWideVec<T>;
    activation_kernel<T, V><<<grid_for(ceil_div(count, V), kThreads, ctx->sm_count), kThreads, 0, ctx->stream>>>(
        fn, x_data, up_data, out_data, count);
  } else {
    activation_kernel<T, 1><<<grid_for(count, kThreads, ctx->sm_count), kThreads, 0, ctx->stream>>>(
        fn, x_data, up_data, out_data, count);
  }
}

template <typename T>
void launch_clamp(rill_backend_context* ctx, const rill_backend_tensor* x, float lo, float hi,
                  const rill_backend_tensor* out) {
  const int64_t count = element_count(x);
  constexpr int kThreads = 256;
  clamp_kernel<T><<<grid_for(count, kThreads, ctx->sm_count), kThreads, 0, ctx->stream>>>(
      static_cast<const T*>(rill_cuda_data(x)), lo, hi, static_cast<T*>(rill_cuda_data(out)), count);
}

/* One upload: the inverse frequencies (double), then the positions. */
rill_status rope_with_freqs(rill_backend_context* ctx, const char* op, const rill_backend_tensor* x,
                            const int32_t* positions, const std::vector<double>& freqs, double factor) {
  // The kernels index heads and dims within a token in 32 bits.
  if (x->shape[1] * x->shape[2] > 0x7FFFFFFF) {
    return rill_cuda_fail(RILL_ERROR_UNSUPPORTED, std::string("cuda: ") + op +
                                                      ": heads*head_dim must be below 2^31, given " +
                                                      std::to_string(x->shape[1] * x->shape[2]));
  }
  rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  const int64_t tokens = x->shape[0];
  const int64_t half = static_cast<int64_t>(freqs.size());
  std::vector<double> staging(freqs);
  staging.resize(static_cast<std::size_t>(half) + static_cast<std::size_t>(ceil_div(tokens, 2)));
  std::memcpy(staging.data() + half, positions, static_cast<std::size_t>(tokens) * sizeof(int32_t));
  void* device = nullptr;
  status = rill_cuda_upload(ctx, staging.data(), staging.size() * sizeof(double), &device);
  if (status != RILL_OK) return status;
  const double* inv_freq = static_cast<const double*>(device);
  const int32_t* device_positions = reinterpret_cast<const int32_t*>(inv_freq + half);
  status = rill_cuda_reserve(ctx, &ctx->rope_table, static_cast<std::size_t>(tokens * half) * sizeof(float2),
                             "cudaMalloc (RoPE table)");
  if (status != RILL_OK) return status;
  auto* table = static_cast<float2*>(ctx->rope_table.data);
  const int64_t table_threads = std::min<int64_t>(256, ceil_div(half, 32) * 32);
  rope_table_kernel<<<dim3(static_cast<unsigned>(ceil_div(half, table_threads)),
                           static_cast<unsigned>(std::min(tokens, kMaxGridY))),
                      static_cast<unsigned>(table_threads), 0, ctx->stream>>>(
      device_positions, inv_freq, static_cast<float>(factor), tokens, static_cast<int>(half), table);
  switch (x->dtype) {
    case RILL_DTYPE_F32: launch_rope<float>(ctx, x, table, half); break;
    case RILL_DTYPE_F16: launch_rope<__half>(ctx, x, table, half); break;
    case RILL_DTYPE_BF16: launch_rope<__nv_bfloat16>(ctx, x, table, half); break;
    default: return bad_dtype(op, x->dtype);
  }
  return rill_cuda_check(cudaGetLastError(), (std::string(op) + " kernel launch").c_str());
}

}  // namespace

rill_status rill_cuda_rope(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                           float theta, int32_t rotary_dim) {
  // The inverse frequencies as the CPU backend computes them.
  std::vector<double> freqs(static_cast<std::size_t>(rotary_dim / 2));
  for (std::size_t i = 0; i < freqs.size(); ++i) {
    freqs[i] = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / rotary_dim);
  }
  return rope_with_freqs(ctx, "rope", x, positions, freqs, 1.0);
}

rill_status rill_cuda_rope_freqs(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                                 const float* inv_freq, float attention_factor, int32_t rotary_dim) {
  const std::vector<double> freqs(inv_freq, inv_freq + rotary_dim / 2);
  return rope_with_freqs(ctx, "rope_freqs", x, positions, freqs, attention_factor);
}

rill_status rill_cuda_attention(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                                const rill_backend_tensor* v, const int32_t* kv_lengths, float scale,
                                const rill_backend_tensor* out) {
  const rill_attention_params params{sizeof(rill_attention_params), scale, 0, 0.0f};
  return rill_cuda_attention_ex(ctx, q, k, v, kv_lengths, &params, out);
}

rill_status rill_cuda_attention_ex(rill_backend_context* ctx, const rill_backend_tensor* q,
                                   const rill_backend_tensor* k, const rill_backend_tensor* v,
                                   const int32_t* kv_lengths, const rill_attention_params* params,
                                   const rill_backend_tensor* out) {
  AttentionShape s{};
  s.batch = q->shape[0];
  s.queries = q->shape[1];
  s.q_heads = q->shape[2];
  s.head_dim = q->shape[3];
  s.slots = k->shape[1];
  s.kv_heads = k->shape[2];
  s.group = s.q_heads / s.kv_heads;
  s.blocks_per_group = ceil_div(s.group, kHeadsPerBlock);
  s.scale = params->scale;
  s.window = RILL_STRUCT_HAS(rill_attention_params, params, window) ? params->window : 0;
  s.softcap = RILL_STRUCT_HAS(rill_attention_params, params, softcap) ? params->softcap : 0.0f;
  rill_status status = rill_cuda_check_attention(s.head_dim, s.batch * s.queries * s.q_heads);
  if (status != RILL_OK) return status;
  status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  void* device_lengths = nullptr;
  status = rill_cuda_upload(ctx, kv_lengths, static_cast<std::size_t>(s.batch) * sizeof(int32_t), &device_lengths);
  if (status != RILL_OK) return status;
  const int32_t* lengths = static_cast<const int32_t*>(device_lengths);
  // Prefill in f16/bf16 with head_dim 64/128/256 runs on tensor cores.
  if (rill_cuda_flash_attention_applies(q, k, v, out)) {
    return rill_cuda_flash_attention(ctx, q, k, v, lengths, s.scale, s.window, s.softcap, out);
  }
  int64_t span = 0;  // the most slots one query sees
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t seen = s.window > 0 && s.window < kv_lengths[b] ? s.window : kv_lengths[b];
    span = seen > span ? seen : span;
  }
  const int64_t rows = s.batch * s.queries * s.q_heads;
  const int64_t splits = attention_splits(attention_blocks(s), span, ctx->sm_count);
  s.chunk = ceil_div(span, splits);
  if (splits > 1) {
    const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(rows * splits * (2 + s.head_dim));
    status = rill_cuda_reserve(ctx, &ctx->attention_partials, bytes, "cudaMalloc (attention split partials)");
    if (status != RILL_OK) return status;
    s.partials = static_cast<float*>(ctx->attention_partials.data);
  }
  switch (q->dtype) {
    case RILL_DTYPE_F32: launch_attention<float>(ctx, q, k, v, lengths, splits, s, out); break;
    case RILL_DTYPE_F16: launch_attention<__half>(ctx, q, k, v, lengths, splits, s, out); break;
    case RILL_DTYPE_BF16: launch_attention<__nv_bfloat16>(ctx, q, k, v, lengths, splits, s, out); break;
    default: return bad_dtype("attention", q->dtype);
  }
  return rill_cuda_check(cudaGetLastError(), "attention kernel launch");
}

rill_status rill_cuda_check_attention(int64_t head_dim, int64_t query_rows) {
  if (head_dim > kMaxHeadDim) {
    return rill_cuda_fail(RILL_ERROR_UNSUPPORTED, "cuda: attention: head_dim must be at most " +
                                                      std::to_string(kMaxHeadDim) + ", given " +
                                                      std::to_string(head_dim));
  }
  if (query_rows > 0x7FFFFFFF) {
    return rill_cuda_fail(RILL_ERROR_UNSUPPORTED, "cuda: attention: B*T*heads must be below 2^31, given " +
                                                      std::to_string(query_rows));
  }
  return RILL_OK;
}

rill_status rill_cuda_activation(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                                 const rill_backend_tensor* up, const rill_backend_tensor* out) {
  if (fn != RILL_ACT_SILU && fn != RILL_ACT_GELU && fn != RILL_ACT_GELU_TANH && fn != RILL_ACT_RELU) {
    return rill_cuda_fail(RILL_ERROR_INVALID_ARGUMENT, "cuda: activation: fn must be a rill_act_fn value, given " +
                                                           std::to_string(static_cast<int>(fn)));
  }
  const rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  switch (x->dtype) {
    case RILL_DTYPE_F32: launch_activation<float>(ctx, fn, x, up, out); break;
    case RILL_DTYPE_F16: launch_activation<__half>(ctx, fn, x, up, out); break;
    case RILL_DTYPE_BF16: launch_activation<__nv_bfloat16>(ctx, fn, x, up, out); break;
    default: return bad_dtype("activation", x->dtype);
  }
  return rill_cuda_check(cudaGetLastError(), "activation kernel launch");
}

rill_status rill_cuda_clamp(rill_backend_context* ctx, const rill_backend_tensor* x, float lo, float hi,
                            const rill_backend_tensor* out) {
  const rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  switch (x->dtype) {
    case RILL_DTYPE_F32: launch_clamp<float>(ctx, x, lo, hi, out); break;
    case RILL_DTYPE_F16: launch_clamp<__half>(ctx, x, lo, hi, out); break;
    case RILL_DTYPE_BF16: launch_clamp<__nv_bfloat16>(ctx, x, lo, hi, out); break;
    default: return bad_dtype("clamp", x->dtype);
  }
  return rill_cuda_check(cudaGetLastError(), "clamp kernel launch");
}
