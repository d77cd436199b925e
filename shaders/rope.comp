#version 450
#extension GL_GOOGLE_include_directive : require
// Rotary position embedding, NeoX rotate-half layout, in place on
// x [tokens, heads, head_dim]. The host computes cos and sin of every
// (token, frequency) angle in double and passes them as an f32 table
// [tokens, half, 2]: GPU sin/cos are only specified to about 1e-3 absolute
// and f32 angles lose the phase of large positions.
#include "common/extensions.glsl"
#include "common/dtype.glsl"

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) buffer XBuffer { STORAGE_T x_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer TableBuffer { float table[]; };

layout(push_constant) uniform Params {
  uint x_offset;
  uint table_offset;
  uint tokens;
  uint heads;
  uint head_dim;
  uint half_rotary; // rotary_dim / 2
} p;

void main() {
  uint pairs = p.tokens * p.heads * p.half_rotary;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint index = gl_GlobalInvocationID.x; index < pairs; index += stride) {
    uint i = index % p.half_rotary;
    uint token_head = index / p.half_rotary;
    uint token = token_head / p.heads;
    uint row = p.x_offset + token_head * p.head_dim;
    uint entry = p.table_offset + 2u * (token * p.half_rotary + i);
    float c = table[entry];
    float s = table[entry + 1u];
    float x1 = TO_F32(x_data[row + i]);
    float x2 = TO_F32(x_data[row + i + p.half_rotary]);
    x_data[row + i] = FROM_F32(x1 * c - x2 * s);
    x_data[row + i + p.half_rotary] = FROM_F32(x2 * c + x1 * s);
  }
}
