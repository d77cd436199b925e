// Interleaved (GPT-J style) rotary checkpoints in rill's half-split RoPE.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rill::layer {

// GPT-J and Cohere rotate each head's dims in pairs (2i, 2i+1); rill's RoPE
// rotates (i, i + rope_dim / 2) with the same frequency i. Permuting the rows
// of q and of k alike within each head (dim 2i to i, 2i+1 to rope_dim/2 + i,
// dims from rope_dim on kept) turns one into the other and leaves every q.k,
// so the checkpoint runs unchanged once its q and k rows (weights, biases and
// QK norm weights) are reordered as they are loaded.
//
// Copies `rows` rows of `row_bytes` bytes each from src to dst in that
// order; rows is a whole number of heads of head_dim rows. src and dst must
// not overlap.
void half_split_rotary_rows(const void* src, void* dst, size_t rows, size_t row_bytes, int64_t head_dim,
                            int64_t rope_dim);

}  // namespace rill::layer
