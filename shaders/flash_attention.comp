#version 450
#extension GL_GOOGLE_include_directive : require
// Flash attention: attention.comp's causal, grouped-KV, windowed and
// soft-capped attention (same layouts, positions and push constants, plus
// split_keys), computed a tile of query rows against tiles of keys.
//
// A workgroup takes ROWS query rows that share one KV head: the rows of one
// sequence b and KV head, ordered by query t and then by the query heads of
// the group (so a decode step's group of heads is one tile). Each tile of KEYS
// keys and then of their values is read once into shared memory, coalesced,
// and serves every row of the tile. Scores for all ROWS x KEYS pairs are
// computed from shared memory, then an online softmax per row (running
// maximum and sum, the accumulators rescaled per key tile), then each
// invocation adds the weighted values into its ROWS * HEAD_DIM_MAX /
// WORKGROUP_SIZE outputs held in registers.
//
// -DSPLIT_KV: workgroup y takes only keys [y * split_keys, (y + 1) *
// split_keys), so that a decode step with few row tiles still fills the GPU,
// and writes per row its unnormalized outputs, its maximum and its sum (f32,
// head_dim + 2 values per row, split-major) to binding 3 for
// attention_merge.comp. Without it the normalized rows go to out.
//
// -DHEAD_DIM_MAX, -DROWS, -DKEYS: the tile, chosen per head_dim so that the
// shared memory stays within 32 KiB (vk_layer_ops.cpp mirrors the sizes).
#include "common/extensions.glsl"
#include "common/dtype.glsl"

#define WORKGROUP_SIZE 128
layout(local_size_x = WORKGROUP_SIZE) in;

// One padding float per key row: the score loop reads a column of keys, so
// without it neighbouring invocations would hit the same shared-memory bank.
#define KEY_STRIDE (HEAD_DIM_MAX + 1)
#define OUTPUTS_PER_INVOCATION (ROWS * HEAD_DIM_MAX / WORKGROUP_SIZE)

layout(std430, set = 0, binding = 0) readonly buffer QBuffer { STORAGE_T q_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer KBuffer { STORAGE_T k_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer VBuffer { STORAGE_T v_data[]; };
#if defined(SPLIT_KV)
layout(std430, set = 0, binding = 3) writeonly buffer PartialBuffer { float partial_data[]; };
#else
layout(std430, set = 0, binding = 3) writeonly buffer OutBuffer { STORAGE_T out_data[]; };
#endif
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
  uint split_keys;  // SPLIT_KV: keys per split, a multiple of KEYS
} p;

shared float q_tile[ROWS * HEAD_DIM_MAX];
shared float kv_tile[KEYS * KEY_STRIDE];  // the keys, then the values, of one tile
shared float weights[ROWS * KEYS];        // scores, then exp(score - running maximum)
shared float row_max[ROWS];
shared float row_sum[ROWS];
shared float row_correction[ROWS];

// The key slots query t of a sequence with `length` keys attends to: [first, visible).
uint visible_end(uint length, uint t) {
  return length - p.queries + t + 1u;
}
uint visible_first(uint length, uint t) {
  uint visible = visible_end(length, t);
  return p.window > 0u && visible > p.window ? visible - p.window : 0u;
}

// Loads keys or values [key0, key_end) of (b, kv_head) into kv_tile, the
// invocations spread over consecutive elements.
void load_kv_tile(bool values, uint b, uint kv_head, uint key0, uint key_end) {
  uint count = min(uint(KEYS), key_end - key0) * p.head_dim;
  for (uint i = gl_LocalInvocationIndex; i < count; i += WORKGROUP_SIZE) {
    uint c = i / p.head_dim;
    uint d = i % p.head_dim;
    uint index = ((b * p.slots + key0 + c) * p.kv_heads + kv_head) * p.head_dim + d;
    kv_tile[c * KEY_STRIDE + d] = values ? TO_F32(v_data[p.v_offset + index]) : TO_F32(k_data[p.k_offset + index]);
  }
}

void main() {
  uint lane = gl_LocalInvocationIndex;
  uint group = p.q_heads / p.kv_heads;
  uint rows_per_head = p.queries * group;  // rows sharing one (b, kv_head)
  uint row_tiles = (rows_per_head + ROWS - 1u) / ROWS;
  uint tiles = p.batch * p.kv_heads * row_tiles;
  for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
    uint row0 = (tile % row_tiles) * ROWS;
    uint kv_head = (tile / row_tiles) % p.kv_heads;
    uint b = tile / (row_tiles * p.kv_heads);
    uint rows = min(uint(ROWS), rows_per_head - row0);
    uint length = uint(kv_lengths[p.lengths_offset + b]);
    // The keys any row of the tile attends to: from the first row's first
    // slot to the last row's last (both grow with t).
    uint key_begin = visible_first(length, row0 / group);
    uint key_end = visible_end(length, (row0 + rows - 1u) / group);
#if defined(SPLIT_KV)
    key_begin = max(key_begin, gl_WorkGroupID.y * p.split_keys);
    key_end = min(key_end, (gl_WorkGroupID.y + 1u) * p.split_keys);
#endif

    for (uint i = lane; i < rows * p.head_dim; i += WORKGROUP_SIZE) {
      uint r = i / p.head_dim;
      uint d = i % p.head_dim;
      uint t = (row0 + r) / group;
      uint h = kv_head * group + (row0 + r) % group;
      q_tile[r * HEAD_DIM_MAX + d] = TO_F32(q_data[p.q_offset + ((b * p.queries + t) * p.q_heads + h) * p.head_dim + d]) * p.scale;
    }
    if (lane < ROWS) {
      row_max[lane] = -1.0 / 0.0;
      row_sum[lane] = 0.0;
    }
    float acc[OUTPUTS_PER_INVOCATION];
    for (uint i = 0; i < OUTPUTS_PER_INVOCATION; ++i) {
      acc[i] = 0.0;
    }
    barrier();

    for (uint key0 = key_begin; key0 < key_end; key0 += KEYS) {
      load_kv_tile(false, b, kv_head, key0, key_end);
      barrier();

      for (uint i = lane; i < ROWS * KEYS; i += WORKGROUP_SIZE) {
        uint r = i / KEYS;
        uint slot = key0 + i % KEYS;
        float score = -1.0 / 0.0;
        uint t = (row0 + r) / group;
        if (r < rows && slot < key_end && slot >= visible_first(length, t) && slot < visible_end(length, t)) {
          uint k_row = (i % KEYS) * KEY_STRIDE;
          score = 0.0;
          for (uint d = 0; d < p.head_dim; ++d) {
            score += q_tile[r * HEAD_DIM_MAX + d] * kv_tile[k_row + d];
          }
          if (p.softcap > 0.0) {
            score = p.softcap * tanh(score / p.softcap);
          }
        }
        weights[i] = score;
      }
      barrier();

      // One invocation per row updates its softmax while the others load the
      // values (kv_tile is free: every score is computed).
      if (lane < ROWS) {
        float old_max = row_max[lane];
        float new_max = old_max;
        for (uint c = 0; c < KEYS; ++c) {
          new_max = max(new_max, weights[lane * KEYS + c]);
        }
        // A row that has seen no key yet (new_max still -inf) keeps weights
        // 0 and its accumulators as they are; exp(-inf - -inf) would be NaN.
        bool seen = new_max > -1.0 / 0.0;
        float sum = 0.0;
        for (uint c = 0; c < KEYS; ++c) {
          float weight = seen ? exp(weights[lane * KEYS + c] - new_max) : 0.0;
          weights[lane * KEYS + c] = weight;
          sum += weight;
        }
        float correction = seen ? exp(old_max - new_max) : 1.0;
        row_correction[lane] = correction;
        row_sum[lane] = row_sum[lane] * correction + sum;
        row_max[lane] = new_max;
      }
      load_kv_tile(true, b, kv_head, key0, key_end);
      barrier();

      uint tile_keys = min(uint(KEYS), key_end - key0);
      for (uint i = 0; i < OUTPUTS_PER_INVOCATION; ++i) {
        uint index = lane + i * WORKGROUP_SIZE;
        uint r = index / HEAD_DIM_MAX;
        uint d = index % HEAD_DIM_MAX;
        if (d < p.head_dim) {
          float sum = acc[i] * row_correction[r];
          for (uint c = 0; c < tile_keys; ++c) {
            sum += weights[r * KEYS + c] * kv_tile[c * KEY_STRIDE + d];
          }
          acc[i] = sum;
        }
      }
      barrier();
    }

    for (uint i = 0; i < OUTPUTS_PER_INVOCATION; ++i) {
      uint index = lane + i * WORKGROUP_SIZE;
      uint r = index / HEAD_DIM_MAX;
      uint d = index % HEAD_DIM_MAX;
      if (r < rows && d < p.head_dim) {
        uint t = (row0 + r) / group;
        uint h = kv_head * group + (row0 + r) % group;
        uint row = (b * p.queries + t) * p.q_heads + h;
#if defined(SPLIT_KV)
        uint base = p.out_offset + (gl_WorkGroupID.y * p.batch * p.queries * p.q_heads + row) * (p.head_dim + 2u);
        partial_data[base + d] = acc[i];
        if (d == 0u) {
          partial_data[base + p.head_dim] = row_max[r];
          partial_data[base + p.head_dim + 1u] = row_sum[r];
        }
#else
        out_data[p.out_offset + row * p.head_dim + d] = FROM_F32(acc[i] / row_sum[r]);
#endif
      }
    }
    // q_tile and the row statistics are rewritten for the next tile.
    barrier();
  }
}
