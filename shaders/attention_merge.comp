#version 450
#extension GL_GOOGLE_include_directive : require
// The merge pass of split-KV flash attention (flash_attention.comp with
// -DSPLIT_KV): each split left, per output row, its unnormalized outputs o_s,
// its maximum score m_s and its sum of weights l_s (f32, head_dim + 2 values
// per row, split-major). With m = max_s m_s the row is
//   out = sum_s exp(m_s - m) o_s / sum_s exp(m_s - m) l_s.
// A split that saw no key of the row left m_s = -inf and counts 0.
//
// One workgroup per row (looping past the grid), invocations over head_dim.
#include "common/extensions.glsl"
#include "common/dtype.glsl"

#define WORKGROUP_SIZE 128
layout(local_size_x = WORKGROUP_SIZE) in;

layout(std430, set = 0, binding = 0) readonly buffer PartialBuffer { float partial_data[]; };
layout(std430, set = 0, binding = 3) writeonly buffer OutBuffer { STORAGE_T out_data[]; };

layout(push_constant) uniform Params {
  uint partial_offset;
  uint out_offset;
  uint rows;
  uint head_dim;
  uint splits;
} p;

void main() {
  uint stride = p.head_dim + 2u;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    float row_max = -1.0 / 0.0;
    for (uint s = 0; s < p.splits; ++s) {
      row_max = max(row_max, partial_data[p.partial_offset + (s * p.rows + row) * stride + p.head_dim]);
    }
    for (uint d = gl_LocalInvocationIndex; d < p.head_dim; d += WORKGROUP_SIZE) {
      float sum = 0.0;
      float total = 0.0;
      for (uint s = 0; s < p.splits; ++s) {
        uint base = p.partial_offset + (s * p.rows + row) * stride;
        float split_max = partial_data[base + p.head_dim];
        float weight = split_max > -1.0 / 0.0 ? exp(split_max - row_max) : 0.0;
        sum += weight * partial_data[base + p.head_dim + 1u];
        total += weight * partial_data[base + d];
      }
      out_data[p.out_offset + row * p.head_dim + d] = FROM_F32(total / sum);
    }
  }
}
