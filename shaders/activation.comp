#version 450
#extension GL_GOOGLE_include_directive : require
// out = fn(x) * up (gated, e.g. SwiGLU) or out = fn(x) without up, elementwise;
// fn = ACT_CLAMP clamps x to [p.lo, p.hi] instead (the clamp op).
// out may alias x or up: each element is read before it is written, by the
// same invocation.
#include "common/extensions.glsl"
#include "common/dtype.glsl"

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) buffer XBuffer { STORAGE_T x_data[]; };
layout(std430, set = 0, binding = 1) buffer UpBuffer { STORAGE_T up_data[]; };
layout(std430, set = 0, binding = 2) buffer OutBuffer { STORAGE_T out_data[]; };

// fn values are those of rill_act_fn.
const uint ACT_SILU = 0u;
const uint ACT_GELU = 1u;
const uint ACT_GELU_TANH = 2u;
const uint ACT_RELU = 3u;
// Not a rill_act_fn: the plugin's clamp op runs through this shader.
const uint ACT_CLAMP = 4u;

layout(push_constant) uniform Params {
  uint x_offset;
  uint up_offset;
  uint out_offset;
  uint has_up;
  uint count;
  uint fn;
  float lo;  // ACT_CLAMP only
  float hi;
} p;

// erf(x) with an absolute error below 1.5e-7 (Abramowitz and Stegun 7.1.26);
// GLSL has no erf.
float erf_approx(float x) {
  float a = abs(x);
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  float y = 1.0 - poly * exp(-a * a);
  return x < 0.0 ? -y : y;
}

// tanh through exp of a non-positive argument, so it cannot overflow.
float tanh_stable(float x) {
  float e = exp(-2.0 * abs(x));
  float y = (1.0 - e) / (1.0 + e);
  return x < 0.0 ? -y : y;
}

float activate(float x) {
  if (p.fn == ACT_SILU) {
    return x / (1.0 + exp(-x));
  } else if (p.fn == ACT_GELU) {
    return 0.5 * x * (1.0 + erf_approx(x * 0.70710678118654752));
  } else if (p.fn == ACT_GELU_TANH) {
    return 0.5 * x * (1.0 + tanh_stable(0.79788456080286536 * (x + 0.044715 * x * x * x)));
  } else if (p.fn == ACT_CLAMP) {
    // Comparisons, not min/max: a NaN fails both and stays NaN (torch.clamp).
    float y = x < p.lo ? p.lo : x;
    return y > p.hi ? p.hi : y;
  }
  return max(x, 0.0);
}

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float y = activate(TO_F32(x_data[p.x_offset + i]));
    if (p.has_up != 0u) {
      y *= TO_F32(up_data[p.up_offset + i]);
    }
    out_data[p.out_offset + i] = FROM_F32(y);
  }
}
