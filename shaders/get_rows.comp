#version 450
#extension GL_GOOGLE_include_directive : require
// Row gather: out[r, :] = table[ids[r], :] converted to out's dtype (a block
// table dequantized by common/weights.glsl), or with has_ids = 0 row r itself:
// the whole table dequantized, which the prefill GEMM on block weights uses.
// One invocation per run of WEIGHT_RUN output elements (common/weights.glsl;
// 8 for block tables, 1 otherwise), looping over any count.
#include "common/extensions.glsl"
#include "common/dtype.glsl"
#include "common/weights.glsl"

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer IdBuffer { int ids[]; };
layout(std430, set = 0, binding = 3) writeonly buffer OutBuffer { STORAGE_T out_data[]; };

layout(push_constant) uniform Params {
  uint table_offset;  // bytes
  uint out_offset;
  uint ids_offset;
  uint has_ids;
  uint count;  // output rows
  uint cols;   // D
  uint table_row_bytes;
} p;

void main() {
  uint runs_per_row = p.cols / WEIGHT_RUN;
  uint total = p.count * runs_per_row;
  uint stride = gl_NumWorkGroups.x * 256u;
  for (uint index = gl_GlobalInvocationID.x; index < total; index += stride) {
    uint r = index / runs_per_row, first = (index - r * runs_per_row) * WEIGHT_RUN;
    uint row = p.has_ids != 0u ? uint(ids[p.ids_offset + r]) : r;
    float w[WEIGHT_RUN];
    weight_run(p.table_offset + row * p.table_row_bytes, first, w);
    uint out_index = p.out_offset + r * p.cols + first;
    for (uint t = 0u; t < WEIGHT_RUN; ++t) {
      out_data[out_index + t] = FROM_F32(w[t]);
    }
  }
}
