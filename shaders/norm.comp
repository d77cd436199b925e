#version 450
#extension GL_GOOGLE_include_directive : require
// RMSNorm or LayerNorm (-DLAYER_NORM) over the last dim, one workgroup per row.
//
// Plain (default): out = norm(x) * weight (+ bias); out may alias x.
// Fused (-DFUSED): in place on two tensors, per row
//   residual = round(residual_scale * residual + update_scale * (gain ⊙ x))
//   x = norm(residual) * weight (+ bias)
// where the rounded residual (its storage dtype) is what gets normalized, so the
// result equals residual_add followed by the plain norm.
//
// Any row length works: each invocation walks the row with a stride of the
// workgroup size, and the row is read again for each pass rather than cached.
#include "common/extensions.glsl"
#include "common/dtype.glsl"
#include "common/reduce.glsl"

// Plain: x_data is the input, out_data the output.
// Fused: x_data is the update and the output, out_data the residual.
layout(std430, set = 0, binding = 0) buffer XBuffer { STORAGE_T x_data[]; };
layout(std430, set = 0, binding = 1) buffer OutBuffer { STORAGE_T out_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer WeightBuffer { STORAGE_T weight_data[]; };
layout(std430, set = 0, binding = 3) readonly buffer BiasBuffer { STORAGE_T bias_data[]; };
layout(std430, set = 0, binding = 4) readonly buffer GainBuffer { STORAGE_T gain_data[]; };

const uint HAS_WEIGHT = 1u;
const uint HAS_BIAS = 2u;
const uint HAS_GAIN = 4u;

layout(push_constant) uniform Params {
  uint x_offset;
  uint out_offset;
  uint weight_offset;
  uint bias_offset;
  uint gain_offset;
  uint flags;
  uint rows;
  uint cols;
  float eps;
  float residual_scale;
  float update_scale;
} p;

#if defined(FUSED)
#define SOURCE(i) TO_F32(out_data[i])
#define STORE_RESULT(i, v) x_data[i] = FROM_F32(v)
#else
#define SOURCE(i) TO_F32(x_data[i])
#define STORE_RESULT(i, v) out_data[i] = FROM_F32(v)
#endif

#if defined(FUSED)
// residual_scale * residual + update_scale * (gain ⊙ x) at column c, in f32.
float updated_residual(uint x_base, uint out_base, uint c) {
  float gain = (p.flags & HAS_GAIN) != 0u ? TO_F32(gain_data[p.gain_offset + c]) : 1.0;
  return p.residual_scale * TO_F32(out_data[out_base + c]) + p.update_scale * (gain * TO_F32(x_data[x_base + c]));
}
#endif

#if defined(LAYER_NORM)
shared float row_shift;
#endif

void main() {
  uint lane = gl_LocalInvocationIndex;
  float inv_cols = 1.0 / float(p.cols);
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint x_base = p.x_offset + row * p.cols;
    uint out_base = p.out_offset + row * p.cols;
#if defined(FUSED)
    uint source_base = out_base;
    uint result_base = x_base;
#else
    uint source_base = x_base;
    uint result_base = out_base;
#endif

#if defined(LAYER_NORM)
    // The mean is accumulated relative to a value near it (the row's first
    // element as stored), so that a large mean beside a small spread keeps its
    // digits in an f32 sum. Invocation 0 fetches it (the fused variant stores
    // that residual element first) and shares it; plain and fused variants so
    // do identical arithmetic on identical stored values.
    if (lane == 0u) {
#if defined(FUSED)
      out_data[out_base] = FROM_F32(updated_residual(x_base, out_base, 0u));
#endif
      row_shift = SOURCE(source_base);
    }
    barrier();
    float shift = row_shift;
#endif

    // Pass 1: sum (LayerNorm, relative to shift) or sum of squares (RMSNorm);
    // the fused variant first forms and stores the rounded residual and sums that.
    float partial = 0.0;
    for (uint c = lane; c < p.cols; c += WORKGROUP_SIZE) {
#if defined(FUSED)
      // Store the residual, then read back the rounded value it now holds
      // (16-bit types may only live in buffers, not in variables). LayerNorm
      // stored element 0 already.
#if defined(LAYER_NORM)
      if (c != 0u)
#endif
      {
        out_data[out_base + c] = FROM_F32(updated_residual(x_base, out_base, c));
      }
      float v = TO_F32(out_data[out_base + c]);
#else
      float v = SOURCE(source_base + c);
#endif
#if defined(LAYER_NORM)
      partial += v - shift;
#else
      partial += v * v;
#endif
    }
    float total = workgroup_sum(partial);

#if defined(LAYER_NORM)
    // Pass 2: the biased variance around the mean, computed from the
    // centred values rather than E[x^2] - mean^2 to avoid cancellation.
    float mean = shift + total * inv_cols;
    float centred = 0.0;
    for (uint c = lane; c < p.cols; c += WORKGROUP_SIZE) {
      float d = SOURCE(source_base + c) - mean;
      centred += d * d;
    }
    float variance = workgroup_sum(centred) * inv_cols;
    float scale = inversesqrt(variance + p.eps);
#else
    float mean = 0.0;
    float scale = inversesqrt(total * inv_cols + p.eps);
#endif

    // Last pass: normalize and write.
    for (uint c = lane; c < p.cols; c += WORKGROUP_SIZE) {
      float v = (SOURCE(source_base + c) - mean) * scale;
      if ((p.flags & HAS_WEIGHT) != 0u) {
        v *= TO_F32(weight_data[p.weight_offset + c]);
      }
#if defined(LAYER_NORM)
      if ((p.flags & HAS_BIAS) != 0u) {
        v += TO_F32(bias_data[p.bias_offset + c]);
      }
#endif
      STORE_RESULT(result_base + c, v);
    }
    // The next row reuses the reduction's shared memory.
    barrier();
  }
}
