#version 450
#extension GL_GOOGLE_include_directive : require
// Causal scaled-dot-product attention with grouped KV heads, prefill or decode.
// q, out: [B, T, Hq, head_dim]; k, v: [B, S, Hkv, head_dim]; query head h
// reads KV head h / (Hq / Hkv). Query t of sequence b sits at position
// p = kv_lengths[b] - T + t and attends to key slots 0..p, or to its last
// `window` of them when window > 0. softcap > 0 caps each logit l to
// softcap * tanh(l / softcap).
//
// One workgroup per query row (b, t, h). Keys are visited in tiles of
// WORKGROUP_SIZE slots, one slot per invocation for the scores, with an online
// softmax (running maximum and sum, rescaled per tile); the value rows of a
// tile are then accumulated with invocations spread over head_dim, so that
// neighbouring invocations read neighbouring elements.
#include "common/extensions.glsl"
#include "common/dtype.glsl"

#ifndef MAX_HEAD_DIM
#define MAX_HEAD_DIM 256
#endif

#include "common/reduce.glsl"

#define DIMS_PER_INVOCATION ((MAX_HEAD_DIM + WORKGROUP_SIZE - 1) / WORKGROUP_SIZE)

layout(std430, set = 0, binding = 0) readonly buffer QBuffer { STORAGE_T q_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer KBuffer { STORAGE_T k_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer VBuffer { STORAGE_T v_data[]; };
layout(std430, set = 0, binding = 3) buffer OutBuffer { STORAGE_T out_data[]; };
layout(std430, set = 0, binding = 4) readonly buffer LengthBuffer { int kv_lengths[]; };

layout(push_constant) uniform Params {
  uint q_offset;
  uint k_offset;
  uint v_offset;
  uint out_offset;
  uint lengths_offset;
  uint batch;
  uint queries;  // T
  uint q_heads;
  uint kv_heads;
  uint head_dim;
  uint slots;    // S
  float scale;
  uint window;   // 0 = none
  float softcap; // 0 = off
} p;

shared float q_row[MAX_HEAD_DIM];
shared float tile_weights[WORKGROUP_SIZE];

void main() {
  uint lane = gl_LocalInvocationIndex;
  uint rows = p.batch * p.queries * p.q_heads;
  uint group = p.q_heads / p.kv_heads;
  for (uint row = gl_WorkGroupID.x; row < rows; row += gl_NumWorkGroups.x) {
    uint h = row % p.q_heads;
    uint t = (row / p.q_heads) % p.queries;
    uint b = row / (p.q_heads * p.queries);
    uint kv_head = h / group;
    uint visible = uint(kv_lengths[p.lengths_offset + b]) - p.queries + t + 1u;  // slots 0..p
    uint first = p.window > 0u && visible > p.window ? visible - p.window : 0u;

    uint q_base = p.q_offset + row * p.head_dim;
    for (uint d = lane; d < p.head_dim; d += WORKGROUP_SIZE) {
      q_row[d] = TO_F32(q_data[q_base + d]) * p.scale;
    }
    barrier();

    float running_max = -1.0 / 0.0;
    float running_sum = 0.0;
    float acc[DIMS_PER_INVOCATION];
    for (uint i = 0; i < DIMS_PER_INVOCATION; ++i) {
      acc[i] = 0.0;
    }

    for (uint tile = first; tile < visible; tile += WORKGROUP_SIZE) {
      uint slot = tile + lane;
      float score = -1.0 / 0.0;
      if (slot < visible) {
        uint k_base = p.k_offset + ((b * p.slots + slot) * p.kv_heads + kv_head) * p.head_dim;
        score = 0.0;
        for (uint d = 0; d < p.head_dim; ++d) {
          score += q_row[d] * TO_F32(k_data[k_base + d]);
        }
        if (p.softcap > 0.0) {
          score = p.softcap * tanh(score / p.softcap);
        }
      }
      float new_max = max(running_max, workgroup_max(score));
      // exp(-inf) is 0 both for the first tile's correction and for slots past
      // the visible range.
      float correction = exp(running_max - new_max);
      float weight = slot < visible ? exp(score - new_max) : 0.0;
      tile_weights[lane] = weight;
      running_sum = running_sum * correction + workgroup_sum(weight);
      running_max = new_max;
      // workgroup_sum ended with a barrier, so tile_weights is complete.

      uint tile_slots = min(uint(WORKGROUP_SIZE), visible - tile);
      for (uint i = 0; i < DIMS_PER_INVOCATION; ++i) {
        uint d = lane + i * WORKGROUP_SIZE;
        if (d < p.head_dim) {
          float sum = acc[i] * correction;
          for (uint j = 0; j < tile_slots; ++j) {
            uint v_index = p.v_offset + ((b * p.slots + tile + j) * p.kv_heads + kv_head) * p.head_dim + d;
            sum += tile_weights[j] * TO_F32(v_data[v_index]);
          }
          acc[i] = sum;
        }
      }
      barrier();
    }

    uint out_base = p.out_offset + row * p.head_dim;
    float inv_sum = 1.0 / running_sum;
    for (uint i = 0; i < DIMS_PER_INVOCATION; ++i) {
      uint d = lane + i * WORKGROUP_SIZE;
      if (d < p.head_dim) {
        out_data[out_base + d] = FROM_F32(acc[i] * inv_sum);
      }
    }
    // q_row is reloaded for the next row.
    barrier();
  }
}
