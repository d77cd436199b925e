#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// gemm.comp's contract on VK_KHR_cooperative_matrix: out[m, n] = alpha *
// sum_k a[m, k] * w[n, k] + beta * out[m, n] + bias[n] (a: [M, K], w: [N, K]),
// f16 inputs multiplied by the device's matrix units with f32 accumulation.
// Built only with a glslang that knows GL_KHR_cooperative_matrix (the probe
// in backends/vulkan/CMakeLists.txt), picked by vk_coopmat.h.
//
// The matrix shape MMA_M x MMA_N x MMA_K is whatever the device reports, set
// by specialization constants. A workgroup is SUBGROUPS_M x SUBGROUPS_N
// subgroups; each owns TILES_M x TILES_N accumulators, so the workgroup's
// block of out is BLOCK_M x BLOCK_N. Per step of BLOCK_K along k the
// workgroup stages a- and w-tiles in shared memory (zeros past M, N and K, so
// any shape works and no global access is out of bounds), then each subgroup
// loads its matrices from there: w's tile read column-major is B = w^T.
// Results go out through a per-subgroup f32 tile, where alpha, beta and bias
// are applied with edge guards. SUBGROUP_SIZE is the device's subgroupSize:
// a SPIR-V 1.5 module runs with exactly that size.
#include "common/extensions.glsl"
#include "common/dtype.glsl"

#define SUBGROUPS_M 2
#define SUBGROUPS_N 2
#define TILES_M 2
#define TILES_N 2
#define K_STEPS 2
// A padding of 8 halves keeps rows 16-byte aligned and off one bank.
#define PAD 8

layout(constant_id = 0) const uint MMA_M = 16;
layout(constant_id = 1) const uint MMA_N = 16;
layout(constant_id = 2) const uint MMA_K = 16;
layout(constant_id = 3) const uint SUBGROUP_SIZE = 32;
// The workgroup is SUBGROUPS_M * SUBGROUPS_N (4) whole subgroups.
layout(local_size_x_id = 3, local_size_y = 4) in;

const uint BLOCK_M = SUBGROUPS_M * TILES_M * MMA_M;
const uint BLOCK_N = SUBGROUPS_N * TILES_N * MMA_N;
const uint BLOCK_K = K_STEPS * MMA_K;
const uint STRIDE = BLOCK_K + PAD;
const uint THREADS = SUBGROUP_SIZE * SUBGROUPS_M * SUBGROUPS_N;

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
} p;

shared float16_t a_tile[BLOCK_M * STRIDE];
shared float16_t w_tile[BLOCK_N * STRIDE];
shared float out_tile[SUBGROUPS_M * SUBGROUPS_N * MMA_M * MMA_N];

#define ACC_T coopmat<float, gl_ScopeSubgroup, MMA_M, MMA_N, gl_MatrixUseAccumulator>

void main() {
  uint lane = gl_SubgroupInvocationID;
  uint subgroup = gl_SubgroupID;
  uint thread = gl_LocalInvocationIndex;
  uint sub_m = subgroup / SUBGROUPS_N;
  uint sub_n = subgroup % SUBGROUPS_N;
  uint col0 = gl_WorkGroupID.x * BLOCK_N;
  uint row_blocks = (p.rows + BLOCK_M - 1) / BLOCK_M;

  // The grid's y extent is capped by the device limit; larger M loops.
  for (uint row_block = gl_WorkGroupID.y; row_block < row_blocks; row_block += gl_NumWorkGroups.y) {
    uint row0 = row_block * BLOCK_M;
    ACC_T acc[TILES_M * TILES_N];
    for (uint t = 0; t < TILES_M * TILES_N; ++t) {
      acc[t] = ACC_T(0.0);
    }

    for (uint k0 = 0; k0 < p.k; k0 += BLOCK_K) {
      // Stage: consecutive invocations read consecutive k of one row.
      for (uint idx = thread; idx < BLOCK_M * BLOCK_K; idx += THREADS) {
        uint r = idx / BLOCK_K, kk = idx % BLOCK_K;
        uint gr = row0 + r, gk = k0 + kk;
        a_tile[r * STRIDE + kk] =
            (gr < p.rows && gk < p.k) ? float16_t(a_data[p.a_offset + gr * p.k + gk]) : float16_t(0.0);
      }
      for (uint idx = thread; idx < BLOCK_N * BLOCK_K; idx += THREADS) {
        uint c = idx / BLOCK_K, kk = idx % BLOCK_K;
        uint gc = col0 + c, gk = k0 + kk;
        w_tile[c * STRIDE + kk] =
            (gc < p.n && gk < p.k) ? float16_t(w_data[p.w_offset + gc * p.k + gk]) : float16_t(0.0);
      }
      barrier();

      for (uint ks = 0; ks < K_STEPS; ++ks) {
        coopmat<float16_t, gl_ScopeSubgroup, MMA_M, MMA_K, gl_MatrixUseA> a_mat[TILES_M];
        coopmat<float16_t, gl_ScopeSubgroup, MMA_K, MMA_N, gl_MatrixUseB> w_mat[TILES_N];
        for (uint i = 0; i < TILES_M; ++i) {
          uint r = (sub_m * TILES_M + i) * MMA_M;
          coopMatLoad(a_mat[i], a_tile, r * STRIDE + ks * MMA_K, STRIDE, gl_CooperativeMatrixLayoutRowMajor);
        }
        for (uint j = 0; j < TILES_N; ++j) {
          uint c = (sub_n * TILES_N + j) * MMA_N;
          coopMatLoad(w_mat[j], w_tile, c * STRIDE + ks * MMA_K, STRIDE, gl_CooperativeMatrixLayoutColumnMajor);
        }
        for (uint i = 0; i < TILES_M; ++i) {
          for (uint j = 0; j < TILES_N; ++j) {
            acc[i * TILES_N + j] = coopMatMulAdd(a_mat[i], w_mat[j], acc[i * TILES_N + j]);
          }
        }
      }
      barrier();
    }

    // Out: each subgroup passes its accumulators one at a time through its
    // own part of out_tile; only its own invocations use that part, so
    // subgroup barriers order the store, the reads and the next store.
    uint own = subgroup * MMA_M * MMA_N;
    for (uint i = 0; i < TILES_M; ++i) {
      for (uint j = 0; j < TILES_N; ++j) {
        coopMatStore(acc[i * TILES_N + j], out_tile, own, MMA_N, gl_CooperativeMatrixLayoutRowMajor);
        subgroupBarrier();
        uint tile_row0 = row0 + (sub_m * TILES_M + i) * MMA_M;
        uint tile_col0 = col0 + (sub_n * TILES_N + j) * MMA_N;
        for (uint e = lane; e < MMA_M * MMA_N; e += SUBGROUP_SIZE) {
          uint gr = tile_row0 + e / MMA_N, gc = tile_col0 + e % MMA_N;
          if (gr < p.rows && gc < p.n) {
            uint out_index = p.out_offset + gr * p.n + gc;
            float v = p.alpha * out_tile[own + e];
            if (p.beta != 0.0) {
              v += p.beta * TO_F32(out_data[out_index]);
            }
            if (p.has_bias != 0u) {
              v += TO_F32(bias_data[p.bias_offset + gc]);
            }
            out_data[out_index] = FROM_F32(v);
          }
        }
        // The next accumulator overwrites this subgroup's part.
        subgroupBarrier();
      }
    }
  }
}
