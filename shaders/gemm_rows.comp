#version 450
#extension GL_GOOGLE_include_directive : require
// GEMM for few rows (decode) on weights of a's dtype, as common/gemv.glsl
// describes; same operands and push constants as gemm.comp. When a's and w's
// rows all start on a multiple of 4 elements, both are read as vectors of 4.
#include "common/extensions.glsl"
#include "common/dtype.glsl"

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
} p;

#include "common/gemv.glsl"

void main() {
  uint lane = gl_LocalInvocationIndex;
  bool vectors = a_rows_vec4() && (p.w_offset & 3u) == 0u;
  uint step = vectors ? 4u : 1u;
  for (uint col0 = gl_WorkGroupID.x * COLS_PER_GROUP; col0 < p.n; col0 += gl_NumWorkGroups.x * COLS_PER_GROUP) {
    gemv_clear();
    for (uint kk = lane * step; kk < p.k; kk += WORKGROUP_SIZE * step) {
      if (vectors) {
        vec4 a[MAX_ROWS];
        for (uint r = 0u; r < ROWS; ++r) {
          a[r] = gemv_a4(p.a_offset + r * p.k + kk, true);
        }
        for (uint c = 0u; c < COLS_PER_GROUP; ++c) {
          if (col0 + c < p.n) {
            vec4 w = VEC4_TO_F32(w_vec[(p.w_offset + (col0 + c) * p.k + kk) >> 2]);
            for (uint r = 0u; r < ROWS; ++r) {
              gemv_acc[c * ROWS + r] += dot(a[r], w);
            }
          }
        }
      } else {
        float a[MAX_ROWS];
        for (uint r = 0u; r < ROWS; ++r) {
          a[r] = TO_F32(a_data[p.a_offset + r * p.k + kk]);
        }
        for (uint c = 0u; c < COLS_PER_GROUP; ++c) {
          if (col0 + c < p.n) {
            float w = TO_F32(w_data[p.w_offset + (col0 + c) * p.k + kk]);
            for (uint r = 0u; r < ROWS; ++r) {
              gemv_acc[c * ROWS + r] += a[r] * w;
            }
          }
        }
      }
    }
    gemv_finish(col0);
  }
}
