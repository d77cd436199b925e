// Pins the layout of the decoder-layer descriptor: fields are only ever
// appended, so these offsets never change (the backend ops' offsets are pinned
// in abi_layout_test.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>

#include "rill.h"
#include "test_helpers.h"

static_assert(offsetof(rill_model_desc, struct_size) == 0);
static_assert(offsetof(rill_model_desc, dtype) == 4);
static_assert(offsetof(rill_model_desc, num_layers) == 8);
static_assert(offsetof(rill_model_desc, hidden_size) == 12);
static_assert(offsetof(rill_model_desc, num_heads) == 16);
static_assert(offsetof(rill_model_desc, num_kv_heads) == 20);
static_assert(offsetof(rill_model_desc, head_dim) == 24);
static_assert(offsetof(rill_model_desc, intermediate_size) == 28);
static_assert(offsetof(rill_model_desc, norm) == 32);
static_assert(offsetof(rill_model_desc, norm_eps) == 36);
static_assert(offsetof(rill_model_desc, norm_placement) == 40);
static_assert(offsetof(rill_model_desc, activation) == 44);
static_assert(offsetof(rill_model_desc, rope_theta) == 48);
static_assert(offsetof(rill_model_desc, rope_dim) == 52);
static_assert(offsetof(rill_model_desc, qkv_bias) == 56);
static_assert(offsetof(rill_model_desc, o_bias) == 60);
static_assert(offsetof(rill_model_desc, mlp_bias) == 64);
static_assert(offsetof(rill_model_desc, final_norm) == 68);
static_assert(offsetof(rill_model_desc, residual_scale) == 72);
static_assert(offsetof(rill_model_desc, branch_scale) == 76);
static_assert(offsetof(rill_model_desc, layer_scale) == 80);
static_assert(offsetof(rill_model_desc, qk_norm) == 84);
static_assert(offsetof(rill_model_desc, norm_weight_offset) == 88);
static_assert(offsetof(rill_model_desc, query_pre_attn_scalar) == 92);
static_assert(offsetof(rill_model_desc, parallel_residual) == 96);
static_assert(offsetof(rill_model_desc, parallel_norms) == 100);
static_assert(offsetof(rill_model_desc, sliding_window) == 104);
static_assert(offsetof(rill_model_desc, sliding_window_pattern) == 108);
static_assert(offsetof(rill_model_desc, max_window_layers) == 112);
static_assert(offsetof(rill_model_desc, attn_logit_softcapping) == 116);
static_assert(offsetof(rill_model_desc, rope_local_base_freq) == 120);
static_assert(offsetof(rill_model_desc, rope_type) == 124);
static_assert(offsetof(rill_model_desc, rope_factor) == 128);
static_assert(offsetof(rill_model_desc, max_position_embeddings) == 132);
static_assert(offsetof(rill_model_desc, rope_original_max_position_embeddings) == 136);
static_assert(offsetof(rill_model_desc, rope_low_freq_factor) == 140);
static_assert(offsetof(rill_model_desc, rope_high_freq_factor) == 144);
static_assert(offsetof(rill_model_desc, rope_beta_fast) == 148);
static_assert(offsetof(rill_model_desc, rope_beta_slow) == 152);
static_assert(offsetof(rill_model_desc, rope_attention_factor) == 156);
static_assert(offsetof(rill_model_desc, rope_factor_count) == 160);
static_assert(offsetof(rill_model_desc, rope_short_factor) == 164);
static_assert(offsetof(rill_model_desc, rope_long_factor) == 1188);
static_assert(offsetof(rill_model_desc, no_rope_layer_interval) == 2212);
static_assert(offsetof(rill_model_desc, num_experts) == 2216);
static_assert(offsetof(rill_model_desc, num_experts_per_tok) == 2220);
static_assert(offsetof(rill_model_desc, norm_topk_prob) == 2224);
static_assert(offsetof(rill_model_desc, moe_intermediate_size) == 2228);
static_assert(offsetof(rill_model_desc, shared_expert_intermediate_size) == 2232);
static_assert(offsetof(rill_model_desc, rope_interleave) == 2236);
static_assert(offsetof(rill_model_desc, decoder_sparse_step) == 2240);
static_assert(offsetof(rill_model_desc, mlp_only_layer_count) == 2244);
static_assert(offsetof(rill_model_desc, mlp_only_layers) == 2248);
static_assert(offsetof(rill_model_desc, weight_format) == 3272);
static_assert(offsetof(rill_model_desc, clip_qkv) == 3276);
static_assert(sizeof(rill_model_desc) == 3280);
static_assert(RILL_ROPE_MAX_FACTORS == 256);
static_assert(RILL_MAX_MLP_ONLY_LAYERS == 256);

static_assert(RILL_ACT_SILU == 0 && RILL_ACT_GELU == 1 && RILL_ACT_GELU_TANH == 2 && RILL_ACT_RELU == 3);
static_assert(RILL_NORM_RMS == 0 && RILL_NORM_LAYER == 1);
static_assert(RILL_PLACEMENT_PRE == 0 && RILL_PLACEMENT_POST == 1 && RILL_PLACEMENT_SANDWICH == 2 &&
              RILL_PLACEMENT_DEEPNORM == 3 && RILL_PLACEMENT_OUTPUT == 4);
static_assert(RILL_QK_NORM_NONE == 0 && RILL_QK_NORM_HEAD == 1 && RILL_QK_NORM_FULL == 2);
static_assert(RILL_MLP_SILU_GLU == 0 && RILL_MLP_GELU_GLU == 1 && RILL_MLP_GELU == 2 && RILL_MLP_GELU_TANH == 3 &&
              RILL_MLP_RELU == 4 && RILL_MLP_GELU_TANH_GLU == 5);
static_assert(RILL_ROPE_DEFAULT == 0 && RILL_ROPE_LINEAR == 1 && RILL_ROPE_DYNAMIC == 2 && RILL_ROPE_YARN == 3 &&
              RILL_ROPE_LONGROPE == 4 && RILL_ROPE_LLAMA3 == 5);

TEST_CASE("an older, shorter descriptor gets the defaults for the fields it lacks") {
  rill_test::ScopedContext context;
  rill_model_desc d = rill_test::model_desc(/*num_layers=*/1, /*hidden_size=*/8, /*num_heads=*/2,
                                            /*intermediate_size=*/8);
  d.layer_scale = 1;  // beyond the size given below: must be ignored,
  d.norm_weight_offset = NAN;  // like these, which would fail the checks
  d.query_pre_attn_scalar = -1.0f;
  d.struct_size = offsetof(rill_model_desc, layer_scale);
  rill_model* model = nullptr;
  REQUIRE_MESSAGE(rill_model_create(context.ctx, &d, &model) == RILL_OK, rill_last_error());
  const int64_t shape[1] = {8};
  const float ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  CHECK(rill_model_set_weight(model, "model.layers.0.mlp_gain", RILL_DTYPE_F32, 1, shape, ones, sizeof ones) ==
        RILL_ERROR_NOT_FOUND);
  rill_model_destroy(model);
}
