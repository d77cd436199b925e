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
// With beta == 0, out is never read.
//
// -DSPLIT_K: the x groups are p.splits runs of column tiles; run s sums only
// k in [s * p.k_chunk, (s + 1) * p.k_chunk) (k_chunk a multiple of TILE_K,
// the last run shorter) and stores its raw sums to partials[s][m][n]
// (binding 4); gemm_split_reduce.comp adds the runs and applies alpha, beta
// and bias. For shapes with too few tiles to fill a GPU.
#include "common/extensions.glsl"
#include "common/dtype.glsl"

#ifndef TILE_M
#define TILE_M 64
#endif
#ifndef TILE_N
#define TILE_N 64
#endif
#ifndef TILE_K
#define TILE_K 16
#endif
#ifndef THREAD_M
#define THREAD_M 4
#endif
#ifndef THREAD_N
#define THREAD_N 4
#endif
#define THREADS_X (TILE_N / THREAD_N)
#define THREADS_Y (TILE_M / THREAD_M)
#define THREADS (THREADS_X * THREADS_Y)

layout(local_size_x = THREADS_X, local_size_y = THREADS_Y) in;

layout(std430, set = 0, binding = 0) readonly buffer ABuffer { STORAGE_T a_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer WBuffer { STORAGE_T w_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias_data[]; };
layout(std430, set = 0, binding = 3) buffer OutBuffer { STORAGE_T out_data[]; };

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

#if defined(SPLIT_K)
layout(std430, set = 0, binding = 4) writeonly buffer PartialBuffer { float partials[]; };
#endif

// One padding column keeps the k-major stores from hitting one bank.
shared float a_tile[TILE_K][TILE_M + 1];
shared float w_tile[TILE_K][TILE_N + 1];

void main() {
  uint tx = gl_LocalInvocationID.x;
  uint ty = gl_LocalInvocationID.y;
  uint lane = gl_LocalInvocationIndex;
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
      // Stage: consecutive invocations read consecutive k of one row.
      for (uint idx = lane; idx < TILE_M * TILE_K; idx += THREADS) {
        uint r = idx / TILE_K;
        uint kk = idx % TILE_K;
        uint gr = row0 + r;
        uint gk = k0 + kk;
        a_tile[kk][r] = (gr < p.rows && gk < k_end) ? TO_F32(a_data[p.a_offset + gr * p.k + gk]) : 0.0;
      }
      for (uint idx = lane; idx < TILE_N * TILE_K; idx += THREADS) {
        uint c = idx / TILE_K;
        uint kk = idx % TILE_K;
        uint gc = col0 + c;
        uint gk = k0 + kk;
        w_tile[kk][c] = (gc < p.n && gk < k_end) ? TO_F32(w_data[p.w_offset + gc * p.k + gk]) : 0.0;
      }
      barrier();

      for (uint kk = 0; kk < TILE_K; ++kk) {
        float a_reg[THREAD_M];
        float w_reg[THREAD_N];
        for (uint i = 0; i < THREAD_M; ++i) {
          a_reg[i] = a_tile[kk][ty + i * THREADS_Y];
        }
        for (uint j = 0; j < THREAD_N; ++j) {
          w_reg[j] = w_tile[kk][tx + j * THREADS_X];
        }
        for (uint i = 0; i < THREAD_M; ++i) {
          for (uint j = 0; j < THREAD_N; ++j) {
            acc[i][j] += a_reg[i] * w_reg[j];
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
