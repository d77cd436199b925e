/* The decoder-layer operators of interface version 2: RoPE (rope.comp),
   attention (flash_attention.comp and attention_merge.comp, or the row
   kernel attention.comp), activations and (version 5) the clamp
   (activation.comp). Host-side
   inputs (KV lengths) travel in staging memory bound straight to the
   dispatch that reads them; RoPE tables are kept on the device for reuse. */
#include <algorithm>
#include <cmath>
#include <vector>

#include "vk_internal.h"

namespace rill_vk {

namespace {

/* Push-constant blocks; each mirrors the Params block of its shader. */
struct RopeParams {
  uint32_t x_offset, table_offset, tokens, heads, head_dim, half_rotary;
};
/* flash_attention.comp's block; attention.comp's ends before split_keys. */
struct AttentionParams {
  uint32_t q_offset, k_offset, v_offset, out_offset, lengths_offset, batch, queries, q_heads, kv_heads, head_dim,
      slots;
  float scale;
  uint32_t window;
  float softcap;
  uint32_t split_keys;
};
struct AttentionMergeParams {
  uint32_t partial_offset, out_offset, rows, head_dim, splits;
};
struct ActivationParams {
  uint32_t x_offset, up_offset, out_offset, has_up, count, fn;
  float lo, hi; /* kActClamp only */
};
/* activation.comp's ACT_CLAMP: the clamp op runs through the activation
   shader, a mode past the rill_act_fn values. */
constexpr uint32_t kActClamp = 4;
static_assert(sizeof(AttentionParams) <= kPushConstantBytes, "push constants exceed the pipeline layout");

constexpr uint32_t kElementwiseGroupSize = 256; /* local_size_x of rope.comp and activation.comp */
constexpr int64_t kAttentionMaxHeadDim = 256;  /* MAX_HEAD_DIM of attention.comp */

/* flash_attention.comp's tiles, one variant per bound on head_dim: the
   HEAD_DIM_MAX, ROWS and KEYS that CMakeLists.txt compiles it with. */
struct FlashTile {
  int64_t head_dim_max;
  uint32_t rows, keys;
};
constexpr FlashTile kFlashTiles[] = {{64, 16, 32}, {128, 16, 16}, {256, 8, 16}};
static_assert(kFlashTiles[2].head_dim_max == kAttentionMaxHeadDim, "flash attention must reach the row kernel's head_dim");

/* The shader's shared arrays: q_tile, kv_tile (one padding float per key),
   weights and three per-row statistics, all f32. */
constexpr uint64_t flash_shared_bytes(const FlashTile& tile) {
  return 4 * (tile.rows * tile.head_dim_max + tile.keys * (tile.head_dim_max + 1) + tile.rows * tile.keys +
              3 * tile.rows);
}
static_assert(flash_shared_bytes(kFlashTiles[0]) <= 32768 && flash_shared_bytes(kFlashTiles[1]) <= 32768 &&
                  flash_shared_bytes(kFlashTiles[2]) <= 32768,
              "flash-attention tiles are sized for 32 KiB of shared memory");

/* Split-KV: a launch of fewer row tiles than kSplitTargetGroups (a decode
   step: B x Hkv tiles) splits its keys into up to kMaxSplits ranges of at
   least kSplitMinKeys, so that about kSplitTargetGroups workgroups run;
   attention_merge.comp then combines the ranges. Shorter ranges would cost
   more in the merge than they gain. */
constexpr uint64_t kSplitTargetGroups = 128;
constexpr uint64_t kSplitMinKeys = 256;
constexpr uint64_t kMaxSplits = 32;

}  // namespace

namespace {

constexpr size_t kRopeTablesKept = 4;

/* The device table for these positions, frequencies and factor: a cached one,
   or a new one computed in double (cos and sin scaled by factor, stored as
   f32, as the CPU backend computes them) that replaces the least recently
   used when kRopeTablesKept are held. */
rill_status rope_table(rill_backend_context* ctx, const int32_t* positions, uint64_t tokens,
                       const std::vector<double>& inv_freq, double factor, rill_backend_buffer** out_table) {
  ++ctx->rope_calls;
  for (RopeTable& cached : ctx->rope_tables) {
    if (cached.factor == factor && cached.inv_freq == inv_freq && cached.positions.size() == tokens &&
        std::equal(cached.positions.begin(), cached.positions.end(), positions)) {
      cached.last_use = ctx->rope_calls;
      *out_table = cached.table;
      return RILL_OK;
    }
  }
  const uint64_t half = inv_freq.size();
  std::vector<float> values(tokens * half * 2);
  for (uint64_t token = 0; token < tokens; ++token) {
    const double position = positions[token];
    for (uint64_t i = 0; i < half; ++i) {
      const double angle = position * inv_freq[i];
      values[2 * (token * half + i)] = static_cast<float>(factor * std::cos(angle));
      values[2 * (token * half + i) + 1] = static_cast<float>(factor * std::sin(angle));
    }
  }
  RopeTable entry;
  entry.inv_freq = inv_freq;
  entry.factor = factor;
  entry.positions.assign(positions, positions + tokens);
  entry.last_use = ctx->rope_calls;
  rill_status status = buffer_alloc(ctx, values.size() * sizeof(float), &entry.table);
  if (status == RILL_OK) status = buffer_write(ctx, entry.table, 0, values.data(), values.size() * sizeof(float));
  if (status != RILL_OK) {
    buffer_free(ctx, entry.table);
    return status;
  }
  if (ctx->rope_tables.size() == kRopeTablesKept) {
    auto oldest = std::min_element(ctx->rope_tables.begin(), ctx->rope_tables.end(),
                                   [](const RopeTable& a, const RopeTable& b) { return a.last_use < b.last_use; });
    buffer_free(ctx, oldest->table); /* destroyed once the ops that read it have run */
    ctx->rope_tables.erase(oldest);
  }
  ctx->rope_tables.push_back(std::move(entry));
  *out_table = ctx->rope_tables.back().table;
  return RILL_OK;
}

rill_status rope_with_table(rill_backend_context* ctx, const char* op, const rill_backend_tensor* x,
                            const int32_t* positions, const std::vector<double>& inv_freq, double factor) {
  rill_status status = prepare_op(ctx, op, x->dtype);
  if (status != RILL_OK) return status;
  const uint64_t tokens = static_cast<uint64_t>(x->shape[0]);
  const uint64_t heads = static_cast<uint64_t>(x->shape[1]);
  const uint64_t head_dim = static_cast<uint64_t>(x->shape[2]);
  const uint64_t half = inv_freq.size();
  rill_backend_buffer* table = nullptr;
  if ((status = rope_table(ctx, positions, tokens, inv_freq, factor, &table)) != RILL_OK) return status;

  BoundRange ranges[kBindingCount];
  ranges[2] = ranges[3] = ranges[4] = placeholder_range(ctx);
  if ((status = bind_tensor(ctx, x, true, &ranges[0])) != RILL_OK) return status;
  if ((status = bind_range(ctx, table, 0, tokens * half * 2, sizeof(float), false, &ranges[1])) != RILL_OK) {
    return status;
  }
  RopeParams params{ranges[0].element_offset, ranges[1].element_offset, static_cast<uint32_t>(tokens),
                    static_cast<uint32_t>(heads), static_cast<uint32_t>(head_dim), static_cast<uint32_t>(half)};
  return record_dispatch(ctx, std::string("rope_") + dtype_suffix(x->dtype), ranges, &params, sizeof params,
                         groups_for(ctx, tokens * heads * half, kElementwiseGroupSize), 1);
}

}  // namespace

rill_status layer_rope(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions, float theta,
                       int32_t rotary_dim) {
  std::vector<double> inv_freq(static_cast<size_t>(rotary_dim / 2));
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    inv_freq[i] = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / rotary_dim);
  }
  return rope_with_table(ctx, "rope", x, positions, inv_freq, 1.0);
}

rill_status layer_rope_freqs(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                             const float* inv_freq, float attention_factor, int32_t rotary_dim) {
  const std::vector<double> freqs(inv_freq, inv_freq + rotary_dim / 2);
  return rope_with_table(ctx, "rope_freqs", x, positions, freqs, attention_factor);
}

rill_status layer_attention(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                            const rill_backend_tensor* v, const int32_t* kv_lengths, float scale,
                            const rill_backend_tensor* out) {
  const rill_attention_params params{sizeof(rill_attention_params), scale, 0, 0.0f};
  return layer_attention_ex(ctx, q, k, v, kv_lengths, &params, out);
}

namespace {

/* The flash-attention tile for head_dim, or nullptr where the row kernel
   runs: the device's shared memory cannot hold the tile, or the context was
   told not to use it. */
const FlashTile* flash_tile_for(rill_backend_context* ctx, int64_t head_dim) {
  if (!ctx->flash_attention) return nullptr;
  for (const FlashTile& tile : kFlashTiles) {
    if (head_dim <= tile.head_dim_max) {
      return flash_shared_bytes(tile) <= ctx->caps.limits.maxComputeSharedMemorySize ? &tile : nullptr;
    }
  }
  return nullptr;
}

/* How many key ranges flash attention splits into (1: none) for row_tiles
   tiles of rows whose longest sequence holds max_length keys. */
uint64_t split_count(uint64_t row_tiles, uint64_t max_length) {
  if (row_tiles >= kSplitTargetGroups) return 1;
  const uint64_t wanted = (kSplitTargetGroups + row_tiles - 1) / row_tiles;
  const uint64_t longest = (max_length + kSplitMinKeys - 1) / kSplitMinKeys;
  return std::min({wanted, longest, kMaxSplits});
}

/* Split-KV flash attention: the split variant writes each range's partial
   rows into a transient f32 buffer (freed behind the frame that reads it),
   attention_merge.comp combines them into out. ranges[3] is rebound here. */
rill_status record_split_attention(rill_backend_context* ctx, const std::string& shader, BoundRange* ranges,
                                   AttentionParams params, uint64_t splits, uint64_t max_length, uint32_t keys,
                                   uint64_t row_tiles, const rill_backend_tensor* out) {
  const uint64_t rows = static_cast<uint64_t>(params.batch) * params.queries * params.q_heads;
  const uint64_t row_values = params.head_dim + 2;
  /* Each range a whole number of key tiles; rounding up may leave fewer ranges. */
  const uint64_t split_keys = ((max_length + splits - 1) / splits + keys - 1) / keys * keys;
  splits = (max_length + split_keys - 1) / split_keys;
  rill_backend_buffer* partial = nullptr;
  rill_status status = buffer_alloc(ctx, splits * rows * row_values * sizeof(float), &partial);
  if (status != RILL_OK) return status;
  const BoundRange out_range = ranges[3];
  if ((status = bind_range(ctx, partial, 0, splits * rows * row_values, sizeof(float), true, &ranges[3])) == RILL_OK) {
    params.out_offset = ranges[3].element_offset;
    params.split_keys = static_cast<uint32_t>(split_keys);
    status = record_dispatch(ctx, shader + "_split", ranges, &params, sizeof params, groups_for(ctx, row_tiles, 1),
                             static_cast<uint32_t>(splits));
  }
  if (status == RILL_OK) {
    BoundRange merge_ranges[kBindingCount];
    merge_ranges[1] = merge_ranges[2] = merge_ranges[4] = placeholder_range(ctx);
    merge_ranges[3] = out_range;
    status = bind_range(ctx, partial, 0, splits * rows * row_values, sizeof(float), false, &merge_ranges[0]);
    const AttentionMergeParams merge{merge_ranges[0].element_offset, out_range.element_offset,
                                     static_cast<uint32_t>(rows), params.head_dim, static_cast<uint32_t>(splits)};
    if (status == RILL_OK) {
      status = record_dispatch(ctx, std::string("attention_merge_") + dtype_suffix(out->dtype), merge_ranges, &merge,
                               sizeof merge, groups_for(ctx, rows, 1), 1);
    }
  }
  buffer_free(ctx, partial);
  return status;
}

}  // namespace

rill_status layer_attention_ex(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                               const rill_backend_tensor* v, const int32_t* kv_lengths,
                               const rill_attention_params* options, const rill_backend_tensor* out) {
  rill_status status = prepare_op(ctx, "attention", q->dtype);
  if (status != RILL_OK) return status;
  const int64_t batch = q->shape[0], queries = q->shape[1], q_heads = q->shape[2], head_dim = q->shape[3];
  const int64_t slots = k->shape[1], kv_heads = k->shape[2];
  if ((status = check_attention_head_dim(head_dim)) != RILL_OK) return status;
  /* Without lengths every sequence holds all S slots. */
  std::vector<int32_t> lengths(static_cast<size_t>(batch), static_cast<int32_t>(slots));
  if (kv_lengths != nullptr) lengths.assign(kv_lengths, kv_lengths + batch);

  BoundRange ranges[kBindingCount];
  if ((status = bind_tensor(ctx, q, false, &ranges[0])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, k, false, &ranges[1])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, v, false, &ranges[2])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, out, true, &ranges[3])) != RILL_OK) return status;
  AttentionParams params{ranges[0].element_offset,
                         ranges[1].element_offset,
                         ranges[2].element_offset,
                         ranges[3].element_offset,
                         0u,
                         static_cast<uint32_t>(batch),
                         static_cast<uint32_t>(queries),
                         static_cast<uint32_t>(q_heads),
                         static_cast<uint32_t>(kv_heads),
                         static_cast<uint32_t>(head_dim),
                         static_cast<uint32_t>(slots),
                         options->scale,
                         RILL_STRUCT_HAS(rill_attention_params, options, window)
                             ? static_cast<uint32_t>(options->window)
                             : 0u,
                         RILL_STRUCT_HAS(rill_attention_params, options, softcap) ? options->softcap : 0.0f,
                         0u};

  if ((status = upload_to_staging(ctx, lengths.data(), lengths.size() * sizeof(int32_t), &ranges[4])) != RILL_OK) {
    return status;
  }
  const FlashTile* tile = flash_tile_for(ctx, head_dim);
  if (tile == nullptr) {
    const std::string shader = std::string("attention_") + dtype_suffix(q->dtype) + reduction_suffix(ctx);
    return record_dispatch(ctx, shader, ranges, &params, sizeof params,
                           groups_for(ctx, static_cast<uint64_t>(batch * queries * q_heads), 1), 1);
  }
  const uint64_t rows_per_head = static_cast<uint64_t>(queries * (q_heads / kv_heads));
  const uint64_t row_tiles =
      static_cast<uint64_t>(batch * kv_heads) * ((rows_per_head + tile->rows - 1) / tile->rows);
  const uint64_t max_length = static_cast<uint64_t>(*std::max_element(lengths.begin(), lengths.end()));
  const std::string shader =
      std::string("flash_attention_") + dtype_suffix(q->dtype) + "_d" + std::to_string(tile->head_dim_max);
  const uint64_t splits = split_count(row_tiles, max_length);
  if (splits > 1) {
    return record_split_attention(ctx, shader, ranges, params, splits, max_length, tile->keys, row_tiles, out);
  }
  return record_dispatch(ctx, shader, ranges, &params, sizeof params, groups_for(ctx, row_tiles, 1), 1);
}

namespace {

/* activation.comp on x (and up, when not NULL) into out with mode fn. */
rill_status elementwise(rill_backend_context* ctx, const char* op, uint32_t fn, const rill_backend_tensor* x,
                        const rill_backend_tensor* up, float lo, float hi, const rill_backend_tensor* out) {
  rill_status status = prepare_op(ctx, op, x->dtype);
  if (status != RILL_OK) return status;
  BoundRange ranges[kBindingCount];
  ranges[3] = ranges[4] = placeholder_range(ctx);
  if ((status = bind_tensor(ctx, x, false, &ranges[0])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, up, false, &ranges[1])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, out, true, &ranges[2])) != RILL_OK) return status;
  const uint64_t count = tensor_numel(x);
  ActivationParams params{ranges[0].element_offset, ranges[1].element_offset, ranges[2].element_offset,
                          up != nullptr ? 1u : 0u,  static_cast<uint32_t>(count),  fn, lo, hi};
  return record_dispatch(ctx, std::string("activation_") + dtype_suffix(x->dtype), ranges, &params, sizeof params,
                         groups_for(ctx, count, kElementwiseGroupSize), 1);
}

}  // namespace

rill_status layer_activation(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                             const rill_backend_tensor* up, const rill_backend_tensor* out) {
  return elementwise(ctx, "activation", static_cast<uint32_t>(fn), x, up, 0.0f, 0.0f, out);
}

rill_status layer_clamp(rill_backend_context* ctx, const rill_backend_tensor* x, float lo, float hi,
                        const rill_backend_tensor* out) {
  return elementwise(ctx, "clamp", kActClamp, x, nullptr, lo, hi, out);
}

void release_rope_tables(rill_backend_context* ctx) {
  for (RopeTable& cached : ctx->rope_tables) buffer_free(ctx, cached.table);
  ctx->rope_tables.clear();
}

rill_status check_attention_head_dim(int64_t head_dim) {
  if (head_dim > kAttentionMaxHeadDim) {
    return fail(RILL_ERROR_UNSUPPORTED, "Vulkan: attention: head_dim must be at most " +
                                            std::to_string(kAttentionMaxHeadDim) + ", given " +
                                            std::to_string(head_dim));
  }
  return RILL_OK;
}

}  // namespace rill_vk
