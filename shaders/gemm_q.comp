#version 450
#extension GL_GOOGLE_include_directive : require
// GEMM on block-format weights for few rows (decode), as common/gemv.glsl
// describes, w dequantized on the fly (common/weights.glsl) into the same
// floats as the host's. k is whole blocks, so whole runs: each invocation
// takes runs of WEIGHT_RUN (8) elements, whose scales are read once, and
// reads the matching 8 elements of each row of a as two vectors of 4.
// Prefill dequantizes w with get_rows.comp and runs gemm.comp instead.
#include "common/extensions.glsl"
#include "common/dtype.glsl"
#include "common/weights.glsl"

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

#include "common/gemv.glsl"

void main() {
  uint lane = gl_LocalInvocationIndex;
  bool vectors = a_rows_vec4();
  for (uint col0 = gl_WorkGroupID.x * COLS_PER_GROUP; col0 < p.n; col0 += gl_NumWorkGroups.x * COLS_PER_GROUP) {
    gemv_clear();
    for (uint first = lane * WEIGHT_RUN; first < p.k; first += WORKGROUP_SIZE * WEIGHT_RUN) {
      vec4 a_low[MAX_ROWS], a_high[MAX_ROWS];
      for (uint r = 0u; r < ROWS; ++r) {
        uint a_index = p.a_offset + r * p.k + first;
        a_low[r] = gemv_a4(a_index, vectors);
        a_high[r] = gemv_a4(a_index + 4u, vectors);
      }
      for (uint c = 0u; c < COLS_PER_GROUP; ++c) {
        if (col0 + c < p.n) {
          float w[WEIGHT_RUN];
          weight_run(p.w_offset + (col0 + c) * p.w_row_bytes, first, w);
          vec4 w_low = vec4(w[0], w[1], w[2], w[3]), w_high = vec4(w[4], w[5], w[6], w[7]);
          for (uint r = 0u; r < ROWS; ++r) {
            gemv_acc[c * ROWS + r] += dot(a_low[r], w_low) + dot(a_high[r], w_high);
          }
        }
      }
    }
    gemv_finish(col0);
  }
}
