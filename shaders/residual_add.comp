#version 450
#extension GL_GOOGLE_include_directive : require
// residual = residual_scale * residual + update_scale * (gain ⊙ update),
// elementwise over a [rows, cols] view; gain is [cols] or absent.
#include "common/extensions.glsl"
#include "common/dtype.glsl"

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) buffer ResidualBuffer { STORAGE_T residual_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer UpdateBuffer { STORAGE_T update_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer GainBuffer { STORAGE_T gain_data[]; };

// Offsets are in elements from the start of each bound range.
layout(push_constant) uniform Params {
  uint residual_offset;
  uint update_offset;
  uint gain_offset;
  uint has_gain;
  uint count;
  uint cols;
  float residual_scale;
  float update_scale;
} p;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float gain = p.has_gain != 0u ? TO_F32(gain_data[p.gain_offset + i % p.cols]) : 1.0;
    float residual = TO_F32(residual_data[p.residual_offset + i]);
    float update = TO_F32(update_data[p.update_offset + i]);
    residual_data[p.residual_offset + i] = FROM_F32(p.residual_scale * residual + p.update_scale * (gain * update));
  }
}
