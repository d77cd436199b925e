#version 450
#extension GL_GOOGLE_include_directive : require
// The second pass of split-K GEMM (gemm.comp -DSPLIT_K): out[m, n] = alpha *
// sum_s partials[s][m][n] + beta * out[m, n] + bias[n], the runs added in
// order s = 0, 1, ... so the result does not depend on the grid. Grid-stride
// over the rows * n outputs. Same push constants as gemm.comp.
#include "common/extensions.glsl"
#include "common/dtype.glsl"

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias_data[]; };
layout(std430, set = 0, binding = 3) buffer OutBuffer { STORAGE_T out_data[]; };
layout(std430, set = 0, binding = 4) readonly buffer PartialBuffer { float partials[]; };

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
  uint splits;
  uint k_chunk;
} p;

void main() {
  uint count = p.rows * p.n;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    float sum = 0.0;
    for (uint s = 0u; s < p.splits; ++s) {
      sum += partials[s * count + i];
    }
    uint out_index = p.out_offset + i;
    float v = p.alpha * sum;
    if (p.beta != 0.0) {
      v += p.beta * TO_F32(out_data[out_index]);
    }
    if (p.has_bias != 0u) {
      v += TO_F32(bias_data[p.bias_offset + i % p.n]);
    }
    out_data[out_index] = FROM_F32(v);
  }
}
