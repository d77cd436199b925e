#version 450
#extension GL_GOOGLE_include_directive : require
// out[m, n] = alpha * sum_k a[m, k] * w[n, k] + beta * out[m, n] + bias[n]
// (a: [M, K], w: [N, K], the PyTorch Linear layout), f32 accumulation.
//
// Tiled: each workgroup computes a TILE_M x TILE_N block of out. Per step of
// TILE_K along k it stages an a-tile and a w-tile in shared memory, then each
// invocation accumulates a THREAD_M x THREAD_N block in registers. Invocation
// (tx, ty) owns rows ty + i*THREADS_Y and columns tx + j*THREADS_X, so that
// neighbouring invocations write neighbouring columns. Edges are bounds-checked.
// With beta == 0, out is never read. The tile sizes are -D defines, one
// variant per tile (backends/vulkan/CMakeLists.txt; the plugin chooses among
// them by shape and device limits, vk_gemm_plan.h).
//
// The tiles hold pairs of consecutive k (PAIR_T, common/dtype.glsl): f16 and
// bf16 stay 16-bit in shared memory, two to a uint, and are widened as they
// are read; f32 stays f32. k is summed in order within each pair, as before.
//
// VEC4 (specialization constant 0, set by the plugin when k and both offsets
// are multiples of 4, so every row starts on a vector): a and w are read from
// global memory as vectors of 4 (VEC4_STORAGE_T); a vector lies wholly inside
// or wholly outside [k_begin, k_end), since both are multiples of 4 then.
// Otherwise element by element.
//
// -DSPLIT_K: the x groups are p.splits runs of column tiles; run s sums only
// k in [s * p.k_chunk, (s + 1) * p.k_chunk) (k_chunk a multiple of TILE_K,
// the last run shorter) and stores its raw sums to partials[s][m][n]
// (binding 4); gemm_split_reduce.comp adds the runs and applies alpha, beta
// and bias. For shapes with too few tiles to fill a GPU.
#include "common/extensions.glsl"
#include "common/dtype.glsl"

#if !defined(TILE_M) || !defined(TILE_N) || !defined(THREAD_M) || !defined(THREAD_N)
#error "define TILE_M, TILE_N, THREAD_M and THREAD_N: one variant per tile"
#endif
#define TILE_K 16
#define THREADS_X (TILE_N / THREAD_N)
#define THREADS_Y (TILE_M / THREAD_M)
#define THREADS (THREADS_X * THREADS_Y)
#define PAIRS_K (TILE_K / 2)
#define VECS_K (TILE_K / 4)

layout(local_size_x = THREADS_X, local_size_y = THREADS_Y) in;
layout(constant_id = 0) const uint VEC4 = 0;

layout(std430, set = 0, binding = 1) readonly buffer WBuffer { STORAGE_T w_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer WVecBuffer { VEC4_STORAGE_T w_vec[]; };

layout(push_constant) uniform Params {
  uint a_offset;
  uint w_offset;
  uint bias_offset;
  uint out_offset;
  uint rows;
  uint n;
  uint k;
  uint has_bias;
  float alpha;
  float beta;
#if defined(SPLIT_K)
  uint splits;
  uint k_chunk;
#endif
} p;

#include "common/gemm_operands.glsl"

#if defined(SPLIT_K)
layout(std430, set = 0, binding = 4) writeonly buffer PartialBuffer { float partials[]; };
#endif

// One padding column keeps the k-major stores from hitting one bank.
shared PAIR_T a_tile[PAIRS_K][TILE_M + 1];
shared PAIR_T w_tile[PAIRS_K][TILE_N + 1];

// Stages k0 ... k0 + TILE_K - 1 of rows row0 ... and columns col0 ... into
// the tiles; elements past the rows, columns or k_end are 0.
void stage(uint row0, uint col0, uint k0, uint k_end) {
  uint lane = gl_LocalInvocationIndex;
  if (VEC4 != 0u) {
    // Consecutive invocations read consecutive vectors of one row.
    for (uint idx = lane; idx < TILE_M * VECS_K; idx += THREADS) {
      uint r = idx / VECS_K;
      uint kk = (idx % VECS_K) * 4u;
      uint gr = row0 + r;
      WIDE4_T v = WIDE4_T(0);
      if (gr < p.rows && k0 + kk < k_end) {
        v = VEC4_TO_WIDE(a_vec[(p.a_offset + gr * p.k + k0 + kk) >> 2]);
      }
      a_tile[kk / 2u][r] = PACK_PAIR(v.x, v.y);
      a_tile[kk / 2u + 1u][r] = PACK_PAIR(v.z, v.w);
    }
    for (uint idx = lane; idx < TILE_N * VECS_K; idx += THREADS) {
      uint c = idx / VECS_K;
      uint kk = (idx % VECS_K) * 4u;
      uint gc = col0 + c;
      WIDE4_T v = WIDE4_T(0);
      if (gc < p.n && k0 + kk < k_end) {
        v = VEC4_TO_WIDE(w_vec[(p.w_offset + gc * p.k + k0 + kk) >> 2]);
      }
      w_tile[kk / 2u][c] = PACK_PAIR(v.x, v.y);
      w_tile[kk / 2u + 1u][c] = PACK_PAIR(v.z, v.w);
    }
    return;
  }
  // Consecutive invocations read consecutive pairs of one row.
  for (uint idx = lane; idx < TILE_M * PAIRS_K; idx += THREADS) {
    uint r = idx / PAIRS_K;
    uint kk = (idx % PAIRS_K) * 2u;
    uint gr = row0 + r;
    uint gk = k0 + kk;
    uint index = p.a_offset + gr * p.k + gk;
    WIDE_T x = (gr < p.rows && gk < k_end) ? TO_WIDE(a_data[index]) : WIDE_T(0);
    WIDE_T y = (gr < p.rows && gk + 1u < k_end) ? TO_WIDE(a_data[index + 1u]) : WIDE_T(0);
    a_tile[kk / 2u][r] = PACK_PAIR(x, y);
  }
  for (uint idx = lane; idx < TILE_N * PAIRS_K; idx += THREADS) {
    uint c = idx / PAIRS_K;
    uint kk = (idx % PAIRS_K) * 2u;
    uint gc = col0 + c;
    uint gk = k0 + kk;
    uint index = p.w_offset + gc * p.k + gk;
    WIDE_T x = (gc < p.n && gk < k_end) ? TO_WIDE(w_data[index]) : WIDE_T(0);
    WIDE_T y = (gc < p.n && gk + 1u < k_end) ? TO_WIDE(w_data[index + 1u]) : WIDE_T(0);
    w_tile[kk / 2u][c] = PACK_PAIR(x, y);
  }
}

void main() {
  uint tx = gl_LocalInvocationID.x;
  uint ty = gl_LocalInvocationID.y;
  uint row_tiles = (p.rows + TILE_M - 1) / TILE_M;
#if defined(SPLIT_K)
  uint column_tiles = (p.n + TILE_N - 1) / TILE_N;
  uint split = gl_WorkGroupID.x / column_tiles;
  uint col0 = (gl_WorkGroupID.x % column_tiles) * TILE_N;
  uint k_begin = split * p.k_chunk;
  uint k_end = min(p.k, k_begin + p.k_chunk);
#else
  uint col0 = gl_WorkGroupID.x * TILE_N;
  uint k_begin = 0u;
  uint k_end = p.k;
#endif

  // The grid's y extent is capped by the device limit; larger M loops.
  for (uint row_tile = gl_WorkGroupID.y; row_tile < row_tiles; row_tile += gl_NumWorkGroups.y) {
    uint row0 = row_tile * TILE_M;
    float acc[THREAD_M][THREAD_N];
    for (uint i = 0; i < THREAD_M; ++i) {
      for (uint j = 0; j < THREAD_N; ++j) {
        acc[i][j] = 0.0;
      }
    }

    for (uint k0 = k_begin; k0 < k_end; k0 += TILE_K) {
      stage(row0, col0, k0, k_end);
      barrier();

      for (uint kp = 0; kp < PAIRS_K; ++kp) {
        vec2 a_reg[THREAD_M];
        vec2 w_reg[THREAD_N];
        for (uint i = 0; i < THREAD_M; ++i) {
          a_reg[i] = PAIR_TO_F32(a_tile[kp][ty + i * THREADS_Y]);
        }
        for (uint j = 0; j < THREAD_N; ++j) {
          w_reg[j] = PAIR_TO_F32(w_tile[kp][tx + j * THREADS_X]);
        }
        for (uint i = 0; i < THREAD_M; ++i) {
          for (uint j = 0; j < THREAD_N; ++j) {
            acc[i][j] += a_reg[i].x * w_reg[j].x;
            acc[i][j] += a_reg[i].y * w_reg[j].y;
          }
        }
      }
      barrier();
    }

    for (uint i = 0; i < THREAD_M; ++i) {
      uint gr = row0 + ty + i * THREADS_Y;
      if (gr >= p.rows) {
        continue;
      }
      for (uint j = 0; j < THREAD_N; ++j) {
        uint gc = col0 + tx + j * THREADS_X;
        if (gc >= p.n) {
          continue;
        }
#if defined(SPLIT_K)
        partials[(split * p.rows + gr) * p.n + gc] = acc[i][j];
#else
        uint out_index = p.out_offset + gr * p.n + gc;
        float v = p.alpha * acc[i][j];
        if (p.beta != 0.0) {
          v += p.beta * TO_F32(out_data[out_index]);
        }
        if (p.has_bias != 0u) {
          v += TO_F32(bias_data[p.bias_offset + gc]);
        }
        out_data[out_index] = FROM_F32(v);
#endif
      }
    }
  }
}
