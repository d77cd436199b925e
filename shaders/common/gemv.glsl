// The decode GEMV shared by gemm_rows.comp (element weights) and gemm_q.comp
// (block weights): out[m, n] = alpha * a[m, :] · w[n, :] + beta * out[m, n] +
// bias[n] for the ROWS (<= MAX_ROWS) rows of a.
//
// A workgroup owns COLS_PER_GROUP consecutive output columns (weight rows)
// and streams each of them once, applying every weight element to all rows of
// a; columns past n are skipped. ROWS is a specialization constant, so the
// loops over rows have constant bounds once the pipeline is made and
// gemv_acc stays in registers. The COLS_PER_GROUP x ROWS dot products are
// reduced together: with -DUSE_SUBGROUP by one subgroupAdd each and a single
// pass through shared memory (the plugin picks this path only for subgroups
// of at least WORKGROUP_SIZE / GEMV_SUBGROUP_SLOTS invocations), otherwise
// one shared-memory tree each (common/reduce.glsl).
//
// The kernel declares binding 1 (its weights) and its Params block p, whose
// fields start as gemm.comp's, before including this file after
// common/extensions.glsl and common/dtype.glsl.
#ifndef RILL_GEMV_GLSL
#define RILL_GEMV_GLSL

#define MAX_ROWS 8
#ifndef COLS_PER_GROUP
#define COLS_PER_GROUP 4
#endif
#define GEMV_SUBGROUP_SLOTS 32

#include "common/gemm_operands.glsl"
#include "common/reduce.glsl"

layout(constant_id = 0) const uint ROWS = 1;


// Dot product of column c (0 .. COLS_PER_GROUP - 1) of the group with row r
// of a at gemv_acc[c * ROWS + r].
float gemv_acc[COLS_PER_GROUP * MAX_ROWS];

void gemv_clear() {
  for (uint v = 0u; v < COLS_PER_GROUP * ROWS; ++v) {
    gemv_acc[v] = 0.0;
  }
}

// Elements index ... index + 3 of a; index is a multiple of 4 when vectors.
vec4 gemv_a4(uint index, bool vectors) {
  if (vectors) {
    return VEC4_TO_F32(a_vec[index >> 2]);
  }
  return vec4(TO_F32(a_data[index]), TO_F32(a_data[index + 1u]), TO_F32(a_data[index + 2u]),
              TO_F32(a_data[index + 3u]));
}

void gemv_store(uint col, uint r, float dot_product) {
  if (col >= p.n) {
    return;
  }
  uint out_index = p.out_offset + r * p.n + col;
  float v = p.alpha * dot_product;
  if (p.beta != 0.0) {
    v += p.beta * TO_F32(out_data[out_index]);
  }
  if (p.has_bias != 0u) {
    v += TO_F32(bias_data[p.bias_offset + col]);
  }
  out_data[out_index] = FROM_F32(v);
}

// Reduces gemv_acc over the workgroup and writes the outputs of columns
// col0 ... col0 + COLS_PER_GROUP - 1. Call in uniform control flow.
#if defined(USE_SUBGROUP)
shared float gemv_partials[GEMV_SUBGROUP_SLOTS][COLS_PER_GROUP * MAX_ROWS];

void gemv_finish(uint col0) {
  for (uint v = 0u; v < COLS_PER_GROUP * ROWS; ++v) {
    float subgroup_total = subgroupAdd(gemv_acc[v]);
    if (subgroupElect()) {
      gemv_partials[gl_SubgroupID][v] = subgroup_total;
    }
  }
  barrier();
  uint lane = gl_LocalInvocationIndex;
  if (lane < COLS_PER_GROUP * ROWS) {
    float total = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) {
      total += gemv_partials[s][lane];
    }
    gemv_store(col0 + lane / ROWS, lane % ROWS, total);
  }
  // The next column group overwrites the partials.
  barrier();
}
#else
void gemv_finish(uint col0) {
  for (uint v = 0u; v < COLS_PER_GROUP * ROWS; ++v) {
    float total = workgroup_sum(gemv_acc[v]);
    if (gl_LocalInvocationIndex == 0u) {
      gemv_store(col0 + v / ROWS, v % ROWS, total);
    }
  }
}
#endif

#endif
