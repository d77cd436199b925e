#version 450
#extension GL_GOOGLE_include_directive : require
// GEMM on block-format weights for few rows (decode): out[m, n] = alpha *
// a[m, :] · w[n, :] + beta * out[m, n] + bias[n] for rows <= MAX_ROWS, w
// dequantized on the fly (common/weights.glsl). As gemm_rows.comp: each
// workgroup owns output columns and streams their weight rows once, applying
// every weight element to all rows of a, then reduces across the workgroup.
// Prefill dequantizes w with get_rows.comp and runs gemm.comp instead.
#include "common/extensions.glsl"
#include "common/dtype.glsl"
#include "common/weights.glsl"

#ifndef MAX_ROWS
#define MAX_ROWS 8
#endif

#include "common/reduce.glsl"

layout(std430, set = 0, binding = 0) readonly buffer ABuffer { STORAGE_T a_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias_data[]; };
layout(std430, set = 0, binding = 3) buffer OutBuffer { STORAGE_T out_data[]; };

layout(push_constant) uniform Params {
  uint a_offset;
  uint w_offset;  // bytes
  uint bias_offset;
  uint out_offset;
  uint rows;
  uint n;
  uint k;
  uint has_bias;
  float alpha;
  float beta;
  uint w_row_bytes;
} p;

void main() {
  uint lane = gl_LocalInvocationIndex;
  for (uint col = gl_WorkGroupID.x; col < p.n; col += gl_NumWorkGroups.x) {
    float acc[MAX_ROWS];
    for (uint r = 0; r < MAX_ROWS; ++r) {
      acc[r] = 0.0;
    }
    uint w_row = p.w_offset + col * p.w_row_bytes;
    // k is whole blocks, so whole runs: each invocation takes runs of
    // WEIGHT_RUN elements, whose scales are read once.
    for (uint first = lane * WEIGHT_RUN; first < p.k; first += WORKGROUP_SIZE * WEIGHT_RUN) {
      float w[WEIGHT_RUN];
      weight_run(w_row, first, w);
      for (uint r = 0; r < p.rows; ++r) {
        uint a_index = p.a_offset + r * p.k + first;
        for (uint t = 0u; t < WEIGHT_RUN; ++t) {
          acc[r] += TO_F32(a_data[a_index + t]) * w[t];
        }
      }
    }
    // p.rows is uniform, so every invocation takes part in each reduction.
    for (uint r = 0; r < p.rows; ++r) {
      float dot_product = workgroup_sum(acc[r]);
      if (lane == 0u) {
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
    }
  }
}
