// The decoder-stack API: descriptor checks, the [model] TOML table, weights,
// KV caches (per-sequence lengths, capacity), forward-call checks, decode
// steps that equal prefill, and RILL_ERROR_UNSUPPORTED from a backend that
// lacks the layer ops (the fake plugin). Numerics against PyTorch live in
// tests/torch.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rill.h"
#include "test_helpers.h"

namespace {

using rill_test::expect_failure;

rill_model_desc small_desc() {
  rill_model_desc d = rill_test::model_desc(/*num_layers=*/2, /*hidden_size=*/16, /*num_heads=*/4,
                                            /*intermediate_size=*/24);
  d.num_kv_heads = 2;
  d.qkv_bias = 1;
  return d;
}

struct Fixture {
  rill_context* ctx = nullptr;
  rill_model* model = nullptr;
  std::vector<rill_tensor*> tensors;
  std::vector<rill_kv_cache*> caches;

  explicit Fixture(const rill_model_desc& desc, const char* config = "[runtime]\nbackend = \"cpu\"\n") {
    REQUIRE_MESSAGE(rill_context_create(config, &ctx) == RILL_OK, rill_last_error());
    REQUIRE_MESSAGE(rill_model_create(ctx, &desc, &model) == RILL_OK, rill_last_error());
  }
  ~Fixture() {
    for (rill_tensor* t : tensors) rill_tensor_destroy(t);
    for (rill_kv_cache* c : caches) rill_kv_cache_destroy(c);
    rill_model_destroy(model);
    rill_context_destroy(ctx);
  }
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  // Sets every weight of small_desc() to random values, the norm weights
  // near norm_level (the same values for any norm_level, shifted); with
  // per_head_qk_norm also the [hd] q_norm and k_norm of qk_norm = head.
  void set_all_weights(float norm_level = 1.0f, bool per_head_qk_norm = false) {
    std::mt19937 gen(11);
    std::normal_distribution<float> dist(0.0f, 0.25f);
    const int64_t d = 16, q = 16, kv = 8, inter = 24;
    auto set = [&](const std::string& name, std::vector<int64_t> shape, float offset) {
      size_t n = 1;
      for (int64_t s : shape) n *= static_cast<size_t>(s);
      std::vector<float> v(n);
      for (float& x : v) x = offset + dist(gen);
      REQUIRE_MESSAGE(rill_model_set_weight(model, name.c_str(), RILL_DTYPE_F32, static_cast<int32_t>(shape.size()),
                                            shape.data(), v.data(), n * sizeof(float)) == RILL_OK,
                      rill_last_error());
    };
    for (int layer = 0; layer < 2; ++layer) {
      const std::string p = "model.layers." + std::to_string(layer) + ".";
      set(p + "self_attn.q_proj.weight", {q, d}, 0);
      set(p + "self_attn.q_proj.bias", {q}, 0);
      set(p + "self_attn.k_proj.weight", {kv, d}, 0);
      set(p + "self_attn.k_proj.bias", {kv}, 0);
      set(p + "self_attn.v_proj.weight", {kv, d}, 0);
      set(p + "self_attn.v_proj.bias", {kv}, 0);
      set(p + "self_attn.o_proj.weight", {d, q}, 0);
      set(p + "mlp.gate_proj.weight", {inter, d}, 0);
      set(p + "mlp.up_proj.weight", {inter, d}, 0);
      set(p + "mlp.down_proj.weight", {d, inter}, 0);
      set(p + "input_layernorm.weight", {d}, norm_level);
      set(p + "post_attention_layernorm.weight", {d}, norm_level);
      if (per_head_qk_norm) {
        set(p + "self_attn.q_norm.weight", {d / 4}, norm_level);
        set(p + "self_attn.k_norm.weight", {d / 4}, norm_level);
      }
    }
    set("model.norm.weight", {d}, norm_level);
  }

  rill_tensor* hidden(int64_t batch, int64_t tokens, const std::vector<float>& values) {
    const int64_t shape[3] = {batch, tokens, 16};
    rill_tensor* t = nullptr;
    REQUIRE(rill_tensor_create(ctx, RILL_DTYPE_F32, 3, shape, &t) == RILL_OK);
    tensors.push_back(t);
    if (!values.empty()) REQUIRE(rill_tensor_write_f32(t, values.data(), values.size()) == RILL_OK);
    return t;
  }
  rill_kv_cache* cache(int32_t batch, int32_t capacity) {
    rill_kv_cache* c = nullptr;
    REQUIRE_MESSAGE(rill_kv_cache_create(model, batch, capacity, &c) == RILL_OK, rill_last_error());
    caches.push_back(c);
    return c;
  }
  std::vector<float> forward(rill_kv_cache* c, int64_t batch, int64_t tokens, const std::vector<float>& values) {
    rill_tensor* h = hidden(batch, tokens, values);
    REQUIRE_MESSAGE(rill_model_forward(model, c, h, nullptr, 0) == RILL_OK, rill_last_error());
    std::vector<float> out(values.size());
    REQUIRE(rill_tensor_read_f32(h, out.data(), out.size()) == RILL_OK);
    return out;
  }
};

int32_t cached_tokens(const rill_kv_cache* cache, int32_t sequence) {
  int32_t tokens = -1;
  REQUIRE_MESSAGE(rill_kv_cache_get_length(cache, sequence, &tokens) == RILL_OK, rill_last_error());
  return tokens;
}

std::vector<float> random_tokens(size_t tokens, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(tokens * 16);
  for (float& x : v) x = dist(gen);
  return v;
}

std::vector<float> slice(const std::vector<float>& v, size_t first_token, size_t tokens) {
  return std::vector<float>(v.begin() + static_cast<long>(first_token * 16),
                            v.begin() + static_cast<long>((first_token + tokens) * 16));
}

void check_close(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double{a[i]} - b[i]));
  CHECK_MESSAGE(worst < 1e-5, "largest difference ", worst);
}

}  // namespace

// Stores raw into an enum field byte for byte, the way a C caller can.
template <class Enum>
void store_raw(Enum& field, int32_t raw) {
  static_assert(sizeof(Enum) == sizeof(int32_t), "rill enums are 32-bit");
  std::memcpy(&field, &raw, sizeof raw);
}

// An edit of small_desc() that rill_model_create refuses, with the field its
// message names and how it shows the value.
struct BadDesc {
  void (*edit)(rill_model_desc&);
  const char* field;
  const char* shown = "";  // how the message prints the value, where it matters
};

template <size_t N>
void expect_refused(rill_context* ctx, const BadDesc (&cases)[N]) {
  for (const BadDesc& bad : cases) {
    CAPTURE(bad.field);
    rill_model_desc d = small_desc();
    bad.edit(d);
    rill_model* model = nullptr;
    expect_failure(rill_model_create(ctx, &d, &model), RILL_ERROR_INVALID_ARGUMENT, {bad.field, bad.shown});
    CHECK(model == nullptr);
  }
}

// A mixture of experts that passes the checks: 4 experts, 2 per token.
void four_experts(rill_model_desc& d) {
  d.num_experts = 4;
  d.num_experts_per_tok = 2;
}

TEST_CASE("model descriptors: every field checked, with its name") {
  rill_test::ScopedContext context;
  rill_context* ctx = context.ctx;
  rill_model* model = nullptr;
  const BadDesc cases[] = {
      {[](rill_model_desc& d) { d.num_kv_heads = 3; }, "num_kv_heads"},
      {[](rill_model_desc& d) {
         d.num_heads = 5;
         d.num_kv_heads = 0;
       },
       "head_dim"},  // 16 / 5 does not divide
      {[](rill_model_desc& d) { d.num_layers = 0; }, "num_layers"},
      {[](rill_model_desc& d) { d.hidden_size = -4; }, "hidden_size"},
      {[](rill_model_desc& d) { d.intermediate_size = 0; }, "intermediate_size"},
      {[](rill_model_desc& d) { d.rope_dim = 3; }, "rope_dim"},
      {[](rill_model_desc& d) {
         d.rope_dim = 6;
         d.head_dim = 4;
       },
       "rope_dim"},
      {[](rill_model_desc& d) { d.norm_eps = -1.0f; }, "norm_eps"},
      {[](rill_model_desc& d) { d.norm = static_cast<rill_norm_kind>(7); }, "norm", "got unknown value 7"},
      {[](rill_model_desc& d) { d.norm_placement = static_cast<rill_norm_placement>(9); }, "norm_placement", "got unknown value 9"},
      {[](rill_model_desc& d) { d.activation = static_cast<rill_mlp_activation>(6); }, "activation", "got unknown value 6"},
      // A C caller may store any 32-bit value, negative ones too; written as
      // raw bytes, as C would, since a C++ cast to them is undefined.
      {[](rill_model_desc& d) { store_raw(d.norm, -1); }, "norm", "got unknown value -1"},
      {[](rill_model_desc& d) { store_raw(d.norm_placement, -2); }, "norm_placement", "got unknown value -2"},
      {[](rill_model_desc& d) { store_raw(d.activation, -3); }, "activation", "got unknown value -3"},
      {[](rill_model_desc& d) { d.qk_norm = static_cast<rill_qk_norm>(4); }, "qk_norm", "got unknown value 4"},
      {[](rill_model_desc& d) { store_raw(d.qk_norm, -4); }, "qk_norm", "got unknown value -4"},
      {[](rill_model_desc& d) { d.rope_theta = NAN; }, "rope_theta"},
      {[](rill_model_desc& d) { d.residual_scale = 0.0f; }, "residual_scale"},
      {[](rill_model_desc& d) { d.branch_scale = INFINITY; }, "branch_scale"},
      {[](rill_model_desc& d) { d.norm_weight_offset = NAN; }, "norm_weight_offset", "expected a finite value, got nan"},
      {[](rill_model_desc& d) { d.norm_weight_offset = -INFINITY; }, "norm_weight_offset", "got -inf"},
      {[](rill_model_desc& d) { d.query_pre_attn_scalar = -2.0f; }, "query_pre_attn_scalar",
       "expected a finite value >= 0 (0 = head_dim), got -2"},
      {[](rill_model_desc& d) { d.query_pre_attn_scalar = INFINITY; }, "query_pre_attn_scalar", "got inf"},
      {[](rill_model_desc& d) { d.query_pre_attn_scalar = NAN; }, "query_pre_attn_scalar", "got nan"},
      {[](rill_model_desc& d) { d.dtype = static_cast<rill_dtype>(10); }, "dtype", "got unknown value 10"},
      {[](rill_model_desc& d) { d.struct_size = 0; }, "struct_size"},
      {[](rill_model_desc& d) { d.parallel_norms = 2; }, "parallel_norms", "only with parallel_residual"},
      {[](rill_model_desc& d) {
         d.parallel_residual = 1;
         d.parallel_norms = 3;
       },
       "parallel_norms", "got 3"},
      {[](rill_model_desc& d) {
         d.parallel_residual = 1;
         d.norm_placement = RILL_PLACEMENT_SANDWICH;
       },
       "parallel_residual", "got RILL_PLACEMENT_SANDWICH"},
      {[](rill_model_desc& d) {
         d.parallel_residual = 1;
         d.layer_scale = 1;
       },
       "layer_scale", "parallel_residual"},
      {[](rill_model_desc& d) { d.sliding_window = -1; }, "sliding_window", "expected a value >= 0, got -1"},
      {[](rill_model_desc& d) {
         d.sliding_window = 4;
         d.sliding_window_pattern = -2;
       },
       "sliding_window_pattern", "got -2"},
      {[](rill_model_desc& d) { d.sliding_window_pattern = 2; }, "sliding_window_pattern",
       "needs sliding_window > 0; expected 0 without a window, got 2"},
      {[](rill_model_desc& d) { d.max_window_layers = 1; }, "max_window_layers", "needs sliding_window > 0"},
      {[](rill_model_desc& d) { d.attn_logit_softcapping = -1.0f; }, "attn_logit_softcapping",
       "expected a finite value >= 0 (0 = off), got -1"},
      {[](rill_model_desc& d) { d.attn_logit_softcapping = INFINITY; }, "attn_logit_softcapping", "got inf"},
      {[](rill_model_desc& d) { d.clip_qkv = -0.5f; }, "clip_qkv", "expected a finite value >= 0 (0 = off), got -0.5"},
      {[](rill_model_desc& d) { d.clip_qkv = NAN; }, "clip_qkv", "got nan"},
      {[](rill_model_desc& d) { d.clip_qkv = INFINITY; }, "clip_qkv", "got inf"},
      {[](rill_model_desc& d) {
         d.sliding_window = 4;
         d.rope_local_base_freq = NAN;
       },
       "rope_local_base_freq", "got nan"},
      {[](rill_model_desc& d) { d.rope_local_base_freq = 10000.0f; }, "rope_local_base_freq",
       "needs sliding_window > 0 and rope_theta > 0; expected 0, got 10000"},
  };
  expect_refused(ctx, cases);
  expect_failure(rill_model_create(ctx, nullptr, &model), RILL_ERROR_INVALID_ARGUMENT, {"desc"});
  rill_model_desc d = small_desc();
  expect_failure(rill_model_create(nullptr, &d, &model), RILL_ERROR_INVALID_ARGUMENT, {"ctx"});
}

TEST_CASE("the [model] TOML table") {
  rill_model_desc d;
  const char* good =
      "[runtime]\nbackend = \"cpu\"\n[model]\ndtype = \"bf16\"\nnum_layers = 3\nhidden_size = 896\nnum_heads = 14\n"
      "num_kv_heads = 2\nintermediate_size = 4864\nnorm_placement = \"sandwich\"\nactivation = \"gelu_tanh\"\n"
      "rope_theta = 1000000\nqkv_bias = true\nlayer_scale = true\nbranch_scale = 0.5\nnorm_weight_offset = 1\n"
      "query_pre_attn_scalar = 224.0\n";
  REQUIRE_MESSAGE(rill_model_desc_from_toml(good, "m.toml", &d) == RILL_OK, rill_last_error());
  CHECK(d.dtype == RILL_DTYPE_BF16);
  CHECK(d.num_layers == 3);
  CHECK(d.hidden_size == 896);
  CHECK(d.num_kv_heads == 2);
  CHECK(d.head_dim == 0);  // derived when the model is created
  CHECK(d.norm_placement == RILL_PLACEMENT_SANDWICH);
  CHECK(d.activation == RILL_MLP_GELU_TANH);
  CHECK(d.rope_theta == 1e6f);
  CHECK(d.qkv_bias == 1);
  CHECK(d.layer_scale == 1);
  CHECK(d.branch_scale == 0.5f);
  CHECK(d.final_norm == 1);
  CHECK(d.norm_weight_offset == 1.0f);
  CHECK(d.query_pre_attn_scalar == 224.0f);
  CHECK(d.parallel_residual == 0);
  CHECK(d.parallel_norms == 1);
  CHECK(d.sliding_window == 0);
  CHECK(d.sliding_window_pattern == 0);
  CHECK(d.max_window_layers == 0);
  CHECK(d.attn_logit_softcapping == 0.0f);
  CHECK(d.rope_local_base_freq == 0.0f);
  CHECK(d.clip_qkv == 0.0f);

  const std::string sizes = "[model]\nnum_layers = 1\nhidden_size = 8\nnum_heads = 2\nintermediate_size = 4\n";
  expect_failure(rill_model_desc_from_toml("[runtime]\n", "m.toml", &d), RILL_ERROR_CONFIG, {"m.toml", "[model]"});
  expect_failure(rill_model_desc_from_toml("[model]\nnum_layers = 1\n", "m.toml", &d), RILL_ERROR_CONFIG,
                 {"hidden_size"});
  expect_failure(rill_model_desc_from_toml((sizes + "norm = \"batch\"\n").c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                 {"m.toml:6:8", "model.norm", "\"rms\"", "batch"});
  expect_failure(rill_model_desc_from_toml((sizes + "qkv_bias = 1\n").c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                 {"m.toml:6:", "qkv_bias", "true or false"});
  expect_failure(rill_model_desc_from_toml((sizes + "num_kv_heads = 3\n").c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                 {"m.toml:6:", "num_kv_heads", "3"});
  expect_failure(rill_model_desc_from_toml((sizes + "hidden = 3\n").c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                 {"m.toml:6:1", "unknown key 'model.hidden'"});
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "parallel_residual = true\nparallel_norms = 2\n").c_str(),
                                            "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.parallel_residual == 1);
  CHECK(d.parallel_norms == 2);
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "sliding_window = 512\nsliding_window_pattern = 6\n"
                                                     "max_window_layers = 2\nattn_logit_softcapping = 50.0\n"
                                                     "rope_local_base_freq = 10000.0\n")
                                                .c_str(),
                                            "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.sliding_window == 512);
  CHECK(d.sliding_window_pattern == 6);
  CHECK(d.max_window_layers == 2);
  CHECK(d.attn_logit_softcapping == 50.0f);
  CHECK(d.rope_local_base_freq == 10000.0f);
  expect_failure(rill_model_desc_from_toml((sizes + "sliding_window = -3\n").c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                 {"m.toml:6:", "model.sliding_window"});
  expect_failure(rill_model_desc_from_toml((sizes + "sliding_window_pattern = 2\n").c_str(), "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:6:", "model.sliding_window_pattern", "needs sliding_window > 0"});
  expect_failure(rill_model_desc_from_toml((sizes + "attn_logit_softcapping = \"50\"\n").c_str(), "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:6:", "model.attn_logit_softcapping"});
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "clip_qkv = 8.0\n").c_str(), "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.clip_qkv == 8.0f);
  expect_failure(rill_model_desc_from_toml((sizes + "clip_qkv = -8.0\n").c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                 {"m.toml:6:", "model.clip_qkv", "got -8"});
  expect_failure(rill_model_desc_from_toml((sizes + "clip_qkv = true\n").c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                 {"m.toml:6:", "model.clip_qkv"});
  expect_failure(rill_model_desc_from_toml((sizes + "parallel_residual = true\nnorm_placement = \"post\"\n").c_str(),
                                           "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:6:", "model.parallel_residual", "RILL_PLACEMENT_POST"});
  expect_failure(rill_model_desc_from_toml("[model\n", "m.toml", &d), RILL_ERROR_CONFIG, {"m.toml:1:", "syntax"});
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "activation = \"gelu_tanh_glu\"\n").c_str(), "m.toml", &d) ==
                      RILL_OK,
                  rill_last_error());
  CHECK(d.activation == RILL_MLP_GELU_TANH_GLU);
  // Gemma's keys: a wrong type, then values out of range, each named with its place, the range and the value.
  expect_failure(rill_model_desc_from_toml((sizes + "norm_weight_offset = \"1\"\n").c_str(), "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:6:", "model.norm_weight_offset", "a number", "string"});
  expect_failure(rill_model_desc_from_toml((sizes + "norm_weight_offset = nan\n").c_str(), "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:6:", "model.norm_weight_offset", "finite", "nan"});
  expect_failure(rill_model_desc_from_toml((sizes + "norm_weight_offset = -1e39\n").c_str(), "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:6:", "model.norm_weight_offset", "float's range", "-1e+39"});
  expect_failure(rill_model_desc_from_toml((sizes + "query_pre_attn_scalar = true\n").c_str(), "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:6:", "model.query_pre_attn_scalar", "a number", "boolean"});
  expect_failure(rill_model_desc_from_toml((sizes + "query_pre_attn_scalar = -256\n").c_str(), "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:6:", "model.query_pre_attn_scalar", ">= 0", "-256"});
  expect_failure(rill_model_desc_from_toml((sizes + "query_pre_attn_scalar = inf\n").c_str(), "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:6:", "model.query_pre_attn_scalar", "finite", "inf"});
}

TEST_CASE("weight_format: the [model] key and the descriptor field, with the C option's values and refusals") {
  rill_model_desc d;
  const std::string sizes = "[model]\nnum_layers = 1\nhidden_size = 16\nnum_heads = 4\nintermediate_size = 24\n";
  REQUIRE_MESSAGE(rill_model_desc_from_toml(sizes.c_str(), "m.toml", &d) == RILL_OK, rill_last_error());
  CHECK(d.weight_format == RILL_DTYPE_F32);
  for (const auto& [name, dtype] : {std::pair<const char*, rill_dtype>{"f32", RILL_DTYPE_F32}, {"q8_0", RILL_DTYPE_Q8_0},
                                    {"q4_0", RILL_DTYPE_Q4_0}, {"q4_k", RILL_DTYPE_Q4_K}, {"q5_k", RILL_DTYPE_Q5_K},
                                    {"q6_k", RILL_DTYPE_Q6_K}, {"q5_0", RILL_DTYPE_Q5_0}, {"q5_1", RILL_DTYPE_Q5_1}}) {
    const std::string text = sizes + "weight_format = \"" + name + "\"\n";
    REQUIRE_MESSAGE(rill_model_desc_from_toml(text.c_str(), "m.toml", &d) == RILL_OK, rill_last_error());
    CHECK(d.weight_format == dtype);
  }
  for (const char* bad : {"\"f16\"", "\"q4_1\"", "8"}) {
    const std::string text = sizes + "weight_format = " + bad + "\n";
    expect_failure(rill_model_desc_from_toml(text.c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                   {"m.toml:6:", "model.weight_format", "\"q8_0\""});
  }
  // The C field: a dtype that is neither f32 nor a block format is refused by name.
  rill_context* ctx = nullptr;
  REQUIRE_MESSAGE(rill_context_create("[runtime]\nbackend = \"cpu\"\n", &ctx) == RILL_OK, rill_last_error());
  rill_model* model = nullptr;
  rill_model_desc desc = small_desc();
  desc.weight_format = RILL_DTYPE_BF16;
  expect_failure(rill_model_create(ctx, &desc, &model), RILL_ERROR_INVALID_ARGUMENT,
                 {"desc.weight_format", "RILL_DTYPE_BF16", "set dtype"});
  CHECK(model == nullptr);
  // The field reaches the weights: rows of 16 elements are no whole Q8_0 block,
  // so q_proj is taken in f32 and refused by name in Q8_0.
  const std::vector<float> values(16 * 16, 0.25f);
  const int64_t shape[2] = {16, 16};
  for (const rill_dtype format : {RILL_DTYPE_F32, RILL_DTYPE_Q8_0}) {
    desc.weight_format = format;
    REQUIRE_MESSAGE(rill_model_create(ctx, &desc, &model) == RILL_OK, rill_last_error());
    const rill_status status = rill_model_set_weight(model, "model.layers.0.self_attn.q_proj.weight", RILL_DTYPE_F32,
                                                     2, shape, values.data(), values.size() * sizeof(float));
    if (format == RILL_DTYPE_F32) {
      CHECK_MESSAGE(status == RILL_OK, rill_last_error());
    } else {
      expect_failure(status, RILL_ERROR_SHAPE, {"q_proj", "q8_0", "multiple of 32"});
    }
    rill_model_destroy(model);
    model = nullptr;
  }
  rill_context_destroy(ctx);
}

// The output of a 1-layer stack (hidden 32, every matrix's rows 32 or 64
// elements: whole 32-element blocks, no whole 256-element block) whose
// matrices are set from the same f32 values with weight_format format.
std::vector<float> forward_with_weight_format(rill_dtype format) {
  rill_model_desc desc = rill_test::model_desc(/*num_layers=*/1, /*hidden_size=*/32, /*num_heads=*/4,
                                               /*intermediate_size=*/64);
  desc.weight_format = format;
  rill_context* ctx = nullptr;
  REQUIRE_MESSAGE(rill_context_create("[runtime]\nbackend = \"cpu\"\n", &ctx) == RILL_OK, rill_last_error());
  rill_model* model = nullptr;
  REQUIRE_MESSAGE(rill_model_create(ctx, &desc, &model) == RILL_OK, rill_last_error());
  std::mt19937 gen(5);
  std::normal_distribution<float> dist(0.0f, 0.25f);
  auto set = [&](const char* name, std::vector<int64_t> shape, float offset) {
    std::vector<float> v(static_cast<size_t>(shape[0] * (shape.size() == 2 ? shape[1] : 1)));
    for (float& x : v) x = offset + dist(gen);
    REQUIRE_MESSAGE(rill_model_set_weight(model, name, RILL_DTYPE_F32, static_cast<int32_t>(shape.size()),
                                          shape.data(), v.data(), v.size() * sizeof(float)) == RILL_OK,
                    rill_last_error());
  };
  for (const char* name : {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                           "self_attn.o_proj.weight"}) {
    set((std::string("model.layers.0.") + name).c_str(), {32, 32}, 0);
  }
  set("model.layers.0.mlp.gate_proj.weight", {64, 32}, 0);
  set("model.layers.0.mlp.up_proj.weight", {64, 32}, 0);
  set("model.layers.0.mlp.down_proj.weight", {32, 64}, 0);
  set("model.layers.0.input_layernorm.weight", {32}, 1);
  set("model.layers.0.post_attention_layernorm.weight", {32}, 1);
  set("model.norm.weight", {32}, 1);
  std::vector<float> values(3 * 32);
  for (float& x : values) x = dist(gen);
  const int64_t shape[3] = {1, 3, 32};
  rill_tensor* h = nullptr;
  REQUIRE(rill_tensor_create(ctx, RILL_DTYPE_F32, 3, shape, &h) == RILL_OK);
  REQUIRE(rill_tensor_write_f32(h, values.data(), values.size()) == RILL_OK);
  REQUIRE_MESSAGE(rill_model_forward(model, nullptr, h, nullptr, 0) == RILL_OK, rill_last_error());
  REQUIRE(rill_tensor_read_f32(h, values.data(), values.size()) == RILL_OK);
  rill_tensor_destroy(h);
  rill_model_destroy(model);
  rill_context_destroy(ctx);
  return values;
}

TEST_CASE("weight_format: a K format falls back on rows that are no whole 256-element block, as llama.cpp's quantizer") {
  // Each K format's matrices are stored in its fallback format: the stack
  // computes bit for bit what it computes with that format asked for.
  const std::vector<float> q8_0 = forward_with_weight_format(RILL_DTYPE_Q8_0);
  for (const auto& [k_format, fallback] :
       {std::pair<rill_dtype, rill_dtype>{RILL_DTYPE_Q4_K, RILL_DTYPE_Q5_0}, {RILL_DTYPE_Q5_K, RILL_DTYPE_Q5_1},
        {RILL_DTYPE_Q6_K, RILL_DTYPE_Q8_0}}) {
    const char* const asked = rill_dtype_name(k_format);  // clang before 16 cannot capture a structured binding in CAPTURE
    CAPTURE(asked);
    const std::vector<float> expected = forward_with_weight_format(fallback);
    CHECK(forward_with_weight_format(k_format) == expected);
    // The formats differ in what they compute: equality above is no accident.
    if (fallback != RILL_DTYPE_Q8_0) CHECK(expected != q8_0);
  }
}

TEST_CASE("rope scaling and NoPE: descriptor checks name the field, the value expected and the value given") {
  rill_context* ctx = nullptr;
  REQUIRE(rill_context_create("[runtime]\nbackend = \"cpu\"\n", &ctx) == RILL_OK);
  const BadDesc cases[] = {
      {[](rill_model_desc& d) { d.rope_type = static_cast<rill_rope_type>(6); }, "rope_type", "got unknown value 6"},
      {[](rill_model_desc& d) {
         d.rope_type = RILL_ROPE_LINEAR;
         d.rope_theta = 0;
       },
       "rope_type (rope_scaling.rope_type)", "rope_theta 0"},
      {[](rill_model_desc& d) {
         d.rope_type = RILL_ROPE_LINEAR;
         d.rope_factor = 0;
       },
       "rope_factor (rope_scaling.factor)", "> 0 for rope_type linear, got 0"},
      {[](rill_model_desc& d) {
         d.rope_type = RILL_ROPE_DYNAMIC;
         d.rope_factor = 2;
       },
       "max_position_embeddings", ">= 1 for rope_type dynamic, got 0"},
      {[](rill_model_desc& d) {
         d.rope_type = RILL_ROPE_LLAMA3;
         d.rope_factor = 8;
         d.rope_low_freq_factor = 1;
         d.rope_high_freq_factor = 4;
       },
       "rope_original_max_position_embeddings (rope_scaling.original_max_position_embeddings)", "got 0"},
      {[](rill_model_desc& d) {
         d.rope_type = RILL_ROPE_LLAMA3;
         d.rope_factor = 8;
         d.rope_original_max_position_embeddings = 8192;
         d.rope_low_freq_factor = 4;
         d.rope_high_freq_factor = 1;
       },
       "rope_high_freq_factor (rope_scaling.high_freq_factor)", "> low_freq_factor 4, got 1"},
      {[](rill_model_desc& d) {
         d.rope_type = RILL_ROPE_YARN;
         d.rope_factor = 4;
         d.max_position_embeddings = 32;
         d.rope_beta_slow = NAN;
       },
       "rope_beta_slow (rope_scaling.beta_slow)", "got nan"},
      {[](rill_model_desc& d) {
         d.rope_type = RILL_ROPE_YARN;
         d.rope_factor = 4;
         d.max_position_embeddings = 32;
         d.rope_attention_factor = -1;
       },
       "rope_attention_factor (rope_scaling.attention_factor)", ">= 0 (0 = derived), got -1"},
      {[](rill_model_desc& d) {
         d.rope_type = RILL_ROPE_LONGROPE;
         d.max_position_embeddings = 64;
         d.rope_original_max_position_embeddings = 16;
         d.rope_factor_count = 3;
       },
       "rope_factor_count (rope_scaling.short_factor)",
       "rope_dim / 2 = 2 factors in each of short_factor and long_factor, got 3"},
      {[](rill_model_desc& d) {
         d.rope_type = RILL_ROPE_LONGROPE;
         d.max_position_embeddings = 64;
         d.rope_original_max_position_embeddings = 16;
         d.rope_factor_count = 2;
         d.rope_short_factor[0] = d.rope_short_factor[1] = 1;
         d.rope_long_factor[0] = 1;
       },
       "rope_long_factor (rope_scaling.long_factor)", "[1], got 0"},
      {[](rill_model_desc& d) { d.rope_factor_count = 2; }, "rope_factor_count", "for rope_type default, got 2"},
      {[](rill_model_desc& d) {
         d.rope_type = RILL_ROPE_DYNAMIC;
         d.rope_factor = 2;
         d.max_position_embeddings = 8;
         d.rope_dim = 2;
       },
       "rope_dim", "at least 4 for rope_type dynamic (its exponent d / (d - 2) needs d > 2), got 2"},
      {[](rill_model_desc& d) { d.no_rope_layer_interval = -1; }, "no_rope_layer_interval",
       ">= 0 (0 = RoPE on every layer), got -1"},
      {[](rill_model_desc& d) {
         d.rope_interleave = 1;
         d.rope_theta = 0;
       },
       "rope_interleave", "needs rope_theta > 0; expected false without RoPE, got true"},
  };
  expect_refused(ctx, cases);
  rill_context_destroy(ctx);
}

TEST_CASE("the [model.rope_scaling] table and no_rope_layer_interval") {
  const std::string sizes = "[model]\nnum_layers = 4\nhidden_size = 16\nnum_heads = 4\nintermediate_size = 24\n"
                            "max_position_embeddings = 64\nno_rope_layer_interval = 4\n";
  rill_model_desc d;
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "[model.rope_scaling]\nrope_type = \"llama3\"\nfactor = 8.0\n"
                                                     "original_max_position_embeddings = 16\nlow_freq_factor = 1\n"
                                                     "high_freq_factor = 4\n")
                                                .c_str(),
                                            "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.rope_type == RILL_ROPE_LLAMA3);
  CHECK(d.rope_factor == 8.0f);
  CHECK(d.rope_original_max_position_embeddings == 16);
  CHECK(d.rope_high_freq_factor == 4.0f);
  CHECK(d.max_position_embeddings == 64);
  CHECK(d.no_rope_layer_interval == 4);
  CHECK(d.rope_interleave == 0);
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "rope_interleave = true\n").c_str(), "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.rope_interleave == 1);
  expect_failure(rill_model_desc_from_toml((sizes + "rope_interleave = true\nrope_theta = 0.0\n").c_str(), "m.toml",
                                           &d),
                 RILL_ERROR_CONFIG, {"m.toml:8:", "model.rope_interleave", "needs rope_theta > 0"});
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "[model.rope_scaling]\ntype = \"longrope\"\n"
                                                     "original_max_position_embeddings = 16\n"
                                                     "short_factor = [1.0, 1.5]\nlong_factor = [2, 4.5]\n")
                                                .c_str(),
                                            "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.rope_type == RILL_ROPE_LONGROPE);
  CHECK(d.rope_factor_count == 2);
  CHECK(d.rope_short_factor[1] == 1.5f);
  CHECK(d.rope_long_factor[1] == 4.5f);
  expect_failure(rill_model_desc_from_toml((sizes + "[model.rope_scaling]\nrope_type = \"su\"\n").c_str(), "m.toml",
                                           &d),
                 RILL_ERROR_CONFIG, {"m.toml:9:", "model.rope_scaling.rope_type", "\"llama3\"", "got \"su\""});
  expect_failure(rill_model_desc_from_toml((sizes + "[model.rope_scaling]\nrope_type = \"linear\"\nfactors = 2\n")
                                               .c_str(),
                                           "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:10:", "unknown key 'model.rope_scaling.factors'"});
  expect_failure(rill_model_desc_from_toml((sizes + "[model.rope_scaling]\nrope_type = \"linear\"\nfactor = -2\n")
                                               .c_str(),
                                           "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:10:", "rope_factor (rope_scaling.factor)", "> 0", "got -2"});
  expect_failure(rill_model_desc_from_toml((sizes + "[model.rope_scaling]\nrope_type = \"longrope\"\n"
                                                    "original_max_position_embeddings = 16\n"
                                                    "short_factor = [1.0, 1.5]\nlong_factor = [2]\n")
                                               .c_str(),
                                           "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:12:", "short_factor' and 'long_factor'", "got 2 and 1"});
  // One list without the other (a fuzz finding: this once dereferenced the absent one).
  expect_failure(rill_model_desc_from_toml((sizes + "[model.rope_scaling]\nrope_type = \"longrope\"\n"
                                                    "original_max_position_embeddings = 16\n"
                                                    "long_factor = [2, 4.5]\n")
                                               .c_str(),
                                           "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:11:", "'model.rope_scaling.long_factor'", "'short_factor'", "got none"});
  expect_failure(rill_model_desc_from_toml((sizes + "[model.rope_scaling]\nrope_type = \"longrope\"\n"
                                                    "original_max_position_embeddings = 16\n"
                                                    "short_factor = [1.0, 1.5, 1]\nlong_factor = [2, 2, 2]\n")
                                               .c_str(),
                                           "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:11:", "rope_dim / 2 = 2", "got 3"});
  expect_failure(rill_model_desc_from_toml((sizes + "[model.rope_scaling]\nrope_type = \"longrope\"\n"
                                                    "short_factor = [1.0, \"x\"]\n")
                                               .c_str(),
                                           "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:10:", "model.rope_scaling.short_factor[1]", "a number"});
  expect_failure(rill_model_desc_from_toml((sizes + "[model.rope_scaling]\nrope_type = \"yarn\"\ntype = \"yarn\"\n")
                                               .c_str(),
                                           "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:10:", "'rope_type' and 'type', got both"});
  expect_failure(rill_model_desc_from_toml((sizes + "rope_scaling = 2\n").c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                 {"m.toml:8:", "model.rope_scaling"});
}

TEST_CASE("the QK norm and the output placement: TOML values, weight names and shapes") {
  const std::string sizes = "[model]\nnum_layers = 1\nhidden_size = 16\nnum_heads = 4\nnum_kv_heads = 2\n"
                            "intermediate_size = 24\n";
  rill_model_desc d;
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "qk_norm = \"full\"\nnorm_placement = \"output\"\n").c_str(),
                                            "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.qk_norm == RILL_QK_NORM_FULL);
  CHECK(d.norm_placement == RILL_PLACEMENT_OUTPUT);
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "qk_norm = \"head\"\n").c_str(), "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.qk_norm == RILL_QK_NORM_HEAD);
  REQUIRE_MESSAGE(rill_model_desc_from_toml(sizes.c_str(), "m.toml", &d) == RILL_OK, rill_last_error());
  CHECK(d.qk_norm == RILL_QK_NORM_NONE);
  expect_failure(rill_model_desc_from_toml((sizes + "qk_norm = \"rms\"\n").c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                 {"m.toml:7:11", "model.qk_norm", "\"none\", \"head\", \"head_weights\", \"full\"", "got \"rms\""});
  expect_failure(rill_model_desc_from_toml((sizes + "qk_norm = true\n").c_str(), "m.toml", &d), RILL_ERROR_CONFIG,
                 {"m.toml:7:", "model.qk_norm", "\"none\", \"head\", \"head_weights\", \"full\"", "boolean"});
  expect_failure(rill_model_desc_from_toml((sizes + "norm_placement = \"olmo2\"\n").c_str(), "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:7:", "model.norm_placement", "\"output\"", "got \"olmo2\""});
  // With a LayerNorm model the QK norm is a LayerNorm (Command R+).
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "norm = \"layer\"\nqk_norm = \"head_weights\"\n").c_str(),
                                            "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.qk_norm == RILL_QK_NORM_HEAD_WEIGHTS);

  // hd = 4: per head the two weights are [4]; over the whole projections [16] (Hq*hd) and [8] (Hkv*hd).
  std::vector<float> data(16, 1.0f);
  const int64_t four[1] = {4}, eight[1] = {8}, sixteen[1] = {16};
  rill_model_desc head = small_desc();
  head.qk_norm = RILL_QK_NORM_HEAD;
  Fixture per_head(head);
  CHECK(rill_model_set_weight(per_head.model, "model.layers.1.self_attn.k_norm.weight", RILL_DTYPE_F32, 1, four,
                              data.data(), 4 * 4) == RILL_OK);
  expect_failure(rill_model_set_weight(per_head.model, "model.layers.0.self_attn.q_norm.weight", RILL_DTYPE_F32, 1,
                                       sixteen, data.data(), 16 * 4),
                 RILL_ERROR_SHAPE, {"model.layers.0.self_attn.q_norm.weight", "expected shape [4]", "got [16]"});
  // A weight per head: [Hq, hd] and [Hkv, hd].
  const int64_t four_by_four[2] = {4, 4}, two_by_four[2] = {2, 4};
  rill_model_desc head_weights = small_desc();
  head_weights.qk_norm = RILL_QK_NORM_HEAD_WEIGHTS;
  Fixture weight_per_head(head_weights);
  CHECK(rill_model_set_weight(weight_per_head.model, "model.layers.0.self_attn.q_norm.weight", RILL_DTYPE_F32, 2,
                              four_by_four, data.data(), 16 * 4) == RILL_OK);
  CHECK(rill_model_set_weight(weight_per_head.model, "model.layers.0.self_attn.k_norm.weight", RILL_DTYPE_F32, 2,
                              two_by_four, data.data(), 8 * 4) == RILL_OK);
  expect_failure(rill_model_set_weight(weight_per_head.model, "model.layers.0.self_attn.q_norm.weight", RILL_DTYPE_F32,
                                       1, sixteen, data.data(), 16 * 4),
                 RILL_ERROR_SHAPE, {"model.layers.0.self_attn.q_norm.weight", "expected shape [4, 4]", "got [16]"});
  rill_model_desc full = small_desc();
  full.qk_norm = RILL_QK_NORM_FULL;
  full.norm_placement = RILL_PLACEMENT_OUTPUT;
  Fixture whole(full);
  CHECK(rill_model_set_weight(whole.model, "model.layers.0.self_attn.q_norm.weight", RILL_DTYPE_F32, 1, sixteen,
                              data.data(), 16 * 4) == RILL_OK);
  CHECK(rill_model_set_weight(whole.model, "model.layers.0.self_attn.k_norm.weight", RILL_DTYPE_F32, 1, eight,
                              data.data(), 8 * 4) == RILL_OK);
  expect_failure(rill_model_set_weight(whole.model, "model.layers.0.self_attn.k_norm.weight", RILL_DTYPE_F32, 1, four,
                                       data.data(), 4 * 4),
                 RILL_ERROR_SHAPE, {"model.layers.0.self_attn.k_norm.weight", "expected shape [8]", "got [4]"});
  // output: the norms on the sublayer outputs, none on the inputs.
  CHECK(rill_model_set_weight(whole.model, "model.layers.0.post_feedforward_layernorm.weight", RILL_DTYPE_F32, 1,
                              sixteen, data.data(), 16 * 4) == RILL_OK);
  expect_failure(rill_model_set_weight(whole.model, "model.layers.0.input_layernorm.weight", RILL_DTYPE_F32, 1,
                                       sixteen, data.data(), 16 * 4),
                 RILL_ERROR_NOT_FOUND, {"model.layers.0.input_layernorm.weight"});
  Fixture none(small_desc());
  expect_failure(rill_model_set_weight(none.model, "model.layers.0.self_attn.q_norm.weight", RILL_DTYPE_F32, 1, four,
                                       data.data(), 4 * 4),
                 RILL_ERROR_NOT_FOUND, {"model.layers.0.self_attn.q_norm.weight", "qk_norm"});
}

TEST_CASE("weights: names, shapes and sizes are checked") {
  Fixture f(small_desc());
  const int64_t shape[2] = {8, 16}, wrong[2] = {16, 16};
  std::vector<float> data(16 * 16);
  expect_failure(rill_model_set_weight(f.model, "model.layers.0.self_attn.o_proj.bias", RILL_DTYPE_F32, 1, shape,
                                       data.data(), 16 * 4),
                 RILL_ERROR_NOT_FOUND, {"model.layers.0.self_attn.o_proj.bias"});
  expect_failure(rill_model_set_weight(f.model, "model.layers.2.mlp.up_proj.weight", RILL_DTYPE_F32, 2, shape,
                                       data.data(), 8 * 16 * 4),
                 RILL_ERROR_NOT_FOUND, {"model.layers.2.mlp.up_proj.weight"});
  expect_failure(rill_model_set_weight(f.model, "model.layers.1.self_attn.k_proj.weight", RILL_DTYPE_F32, 2, wrong,
                                       data.data(), 16 * 16 * 4),
                 RILL_ERROR_SHAPE, {"k_proj", "[8, 16]", "[16, 16]"});
  expect_failure(rill_model_set_weight(f.model, "model.layers.1.self_attn.k_proj.weight", RILL_DTYPE_BF16, 2, shape,
                                       data.data(), 8 * 16 * 4),
                 RILL_ERROR_INVALID_ARGUMENT, {"bytes", "256"});
  // Passed by value, so within the enum's range: loading -9 as rill_dtype is undefined in C++.
  expect_failure(rill_model_set_weight(f.model, "model.layers.1.self_attn.k_proj.weight", static_cast<rill_dtype>(10),
                                       2, shape, data.data(), 8 * 16 * 4),
                 RILL_ERROR_INVALID_ARGUMENT, {"src_dtype", "got unknown value 10"});
  expect_failure(rill_model_check_weights(f.model), RILL_ERROR_NOT_FOUND, {"missing weight", "model.layers.0"});
  rill_tensor* h = f.hidden(1, 2, std::vector<float>(32, 1.0f));
  expect_failure(rill_model_forward(f.model, nullptr, h, nullptr, 0), RILL_ERROR_NOT_FOUND, {"missing weight"});
  expect_failure(rill_model_load_safetensors(f.model, "/nonexistent/w.safetensors"), RILL_ERROR_IO,
                 {"/nonexistent/w.safetensors"});
  f.set_all_weights();
  CHECK(rill_model_check_weights(f.model) == RILL_OK);
}

TEST_CASE("fused checkpoint tensors: split into their weights, shapes checked, refused where unusable") {
  Fixture f(small_desc());  // 4 query heads, 2 KV heads of 4, QKV bias, SwiGLU of 24
  f.set_all_weights();
  const std::vector<float> x = random_tokens(3, 5);
  const std::vector<float> before = f.forward(nullptr, 1, 3, x);
  std::mt19937 gen(3);
  std::normal_distribution<float> dist(0.0f, 0.25f);
  auto draw = [&](size_t n) {
    std::vector<float> v(n);
    for (float& e : v) e = dist(gen);
    return v;
  };
  const std::vector<float> qkv = draw(32 * 16), qkv_bias = draw(32), gate_up = draw(48 * 16);
  auto set = [&](const std::string& name, std::vector<int64_t> shape, const float* data) {
    size_t n = 1;
    for (int64_t s : shape) n *= static_cast<size_t>(s);
    REQUIRE_MESSAGE(rill_model_set_weight(f.model, name.c_str(), RILL_DTYPE_F32, static_cast<int32_t>(shape.size()),
                                          shape.data(), data, n * sizeof(float)) == RILL_OK,
                    rill_last_error());
  };
  const std::string p = "model.layers.0.";
  set(p + "self_attn.qkv_proj.weight", {32, 16}, qkv.data());
  set(p + "self_attn.qkv_proj.bias", {32}, qkv_bias.data());
  set(p + "mlp.gate_up_proj.weight", {48, 16}, gate_up.data());
  const std::vector<float> fused = f.forward(nullptr, 1, 3, x);
  // The same values as separate weights: q rows 0-15, k 16-23, v 24-31; gate 0-23, up 24-47.
  set(p + "self_attn.q_proj.weight", {16, 16}, qkv.data());
  set(p + "self_attn.k_proj.weight", {8, 16}, qkv.data() + 16 * 16);
  set(p + "self_attn.v_proj.weight", {8, 16}, qkv.data() + 24 * 16);
  set(p + "self_attn.q_proj.bias", {16}, qkv_bias.data());
  set(p + "self_attn.k_proj.bias", {8}, qkv_bias.data() + 16);
  set(p + "self_attn.v_proj.bias", {8}, qkv_bias.data() + 24);
  set(p + "mlp.gate_proj.weight", {24, 16}, gate_up.data());
  set(p + "mlp.up_proj.weight", {24, 16}, gate_up.data() + 24 * 16);
  CHECK(f.forward(nullptr, 1, 3, x) == fused);
  CHECK(fused != before);

  const int64_t wrong[2] = {48, 16};
  expect_failure(rill_model_set_weight(f.model, (p + "self_attn.qkv_proj.weight").c_str(), RILL_DTYPE_F32, 2, wrong,
                                       gate_up.data(), 48 * 16 * 4),
                 RILL_ERROR_SHAPE, {"model.layers.0.self_attn.qkv_proj.weight", "[32, 16]", "[48, 16]"});
  const int64_t neox[2] = {48, 16};
  expect_failure(rill_model_set_weight(f.model, "gpt_neox.layers.1.attention.query_key_value.weight", RILL_DTYPE_F32,
                                       2, neox, gate_up.data(), 48 * 16 * 4),
                 RILL_ERROR_NOT_FOUND,
                 {"gpt_neox.layers.1.attention.query_key_value.weight", "num_kv_heads", "2 KV heads for 4"});
  rill_model_desc plain = small_desc();
  plain.activation = RILL_MLP_GELU;
  Fixture g(plain);
  expect_failure(rill_model_set_weight(g.model, (p + "mlp.gate_up_proj.weight").c_str(), RILL_DTYPE_F32, 2, wrong,
                                       gate_up.data(), 48 * 16 * 4),
                 RILL_ERROR_NOT_FOUND, {"model.layers.0.mlp.gate_up_proj.weight", "no gate", "RILL_MLP_GELU"});
}

TEST_CASE("mixture of experts: descriptor checks, TOML keys, weight names, Mixtral's names, thread counts") {
  rill_context* ctx = nullptr;
  REQUIRE(rill_context_create("[runtime]\nbackend = \"cpu\"\n", &ctx) == RILL_OK);
  const BadDesc cases[] = {
      {[](rill_model_desc& d) { d.num_experts = -1; }, "num_experts", "expected 0 (dense MLP) to 4096, got -1"},
      {[](rill_model_desc& d) {
         d.num_experts = 4;
         d.num_experts_per_tok = 5;
       },
       "num_experts_per_tok", "expected 1 to num_experts = 4, got 5"},
      {[](rill_model_desc& d) { d.num_experts = 4; }, "num_experts_per_tok", "got 0"},
      {[](rill_model_desc& d) { d.num_experts_per_tok = 2; }, "num_experts_per_tok",
       "applies only with num_experts > 0; expected 0 for a dense MLP, got 2"},
      {[](rill_model_desc& d) { d.shared_expert_intermediate_size = 8; }, "shared_expert_intermediate_size",
       "expected 0 for a dense MLP, got 8"},
      {[](rill_model_desc& d) {
         four_experts(d);
         d.moe_intermediate_size = -3;
       },
       "moe_intermediate_size", "got -3"},
      {[](rill_model_desc& d) {
         four_experts(d);
         d.activation = RILL_MLP_GELU;
       },
       "activation", "gated MLPs; expected silu_glu, gelu_glu or gelu_tanh_glu with num_experts > 0, got RILL_MLP_GELU"},
      {[](rill_model_desc& d) {
         four_experts(d);
         d.norm_placement = RILL_PLACEMENT_POST;
       },
       "norm_placement", "RILL_PLACEMENT_PRE and no parallel_residual, got RILL_PLACEMENT_POST"},
      {[](rill_model_desc& d) {
         four_experts(d);
         d.mlp_bias = 1;
       },
       "mlp_bias", "no bias; expected false with num_experts > 0, got true"},
      {[](rill_model_desc& d) { d.decoder_sparse_step = 2; }, "decoder_sparse_step",
       "applies only with num_experts > 0; expected 0 or 1 for a dense MLP, got 2"},
      {[](rill_model_desc& d) {
         four_experts(d);
         d.decoder_sparse_step = -1;
       },
       "decoder_sparse_step", "expected >= 0 (0 or 1: every layer sparse), got -1"},
      {[](rill_model_desc& d) { d.mlp_only_layer_count = 1; }, "mlp_only_layers",
       "applies only with num_experts > 0; expected no layers for a dense MLP, got 1 layers"},
      {[](rill_model_desc& d) {
         four_experts(d);
         d.mlp_only_layer_count = RILL_MAX_MLP_ONLY_LAYERS + 1;
       },
       "mlp_only_layer_count", "expected 0 to RILL_MAX_MLP_ONLY_LAYERS = 256, got 257"},
      {[](rill_model_desc& d) {
         four_experts(d);
         d.mlp_only_layer_count = 1;
         d.mlp_only_layers[0] = 2;
       },
       "mlp_only_layers[0]", "expected a layer index from 0 to num_layers - 1 = 1, got 2"},
      {[](rill_model_desc& d) {
         four_experts(d);
         d.mlp_only_layer_count = 2;
         d.mlp_only_layers[0] = d.mlp_only_layers[1] = 1;
       },
       "mlp_only_layers[1]", "expected each layer once, got layer 1 again"},
  };
  expect_refused(ctx, cases);
  rill_context_destroy(ctx);

  const std::string sizes = "[model]\nnum_layers = 2\nhidden_size = 16\nnum_heads = 4\nintermediate_size = 24\n";
  rill_model_desc d;
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "num_experts = 4\nnum_experts_per_tok = 2\n"
                                                     "norm_topk_prob = true\nmoe_intermediate_size = 12\n"
                                                     "shared_expert_intermediate_size = 20\n")
                                                .c_str(),
                                            "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.num_experts == 4);
  CHECK(d.num_experts_per_tok == 2);
  CHECK(d.norm_topk_prob == 1);
  CHECK(d.moe_intermediate_size == 12);
  CHECK(d.shared_expert_intermediate_size == 20);
  expect_failure(rill_model_desc_from_toml((sizes + "num_experts = 2\nnum_experts_per_tok = 3\n").c_str(), "m.toml",
                                           &d),
                 RILL_ERROR_CONFIG, {"m.toml:7:", "model.num_experts_per_tok", "num_experts = 2, got 3"});
  REQUIRE_MESSAGE(rill_model_desc_from_toml((sizes + "num_experts = 4\nnum_experts_per_tok = 2\n"
                                                     "decoder_sparse_step = 2\nmlp_only_layers = [1, 0]\n")
                                                .c_str(),
                                            "m.toml", &d) == RILL_OK,
                  rill_last_error());
  CHECK(d.decoder_sparse_step == 2);
  CHECK(d.mlp_only_layer_count == 2);
  CHECK(d.mlp_only_layers[0] == 1);
  CHECK(d.mlp_only_layers[1] == 0);
  expect_failure(rill_model_desc_from_toml((sizes + "num_experts = 4\nnum_experts_per_tok = 2\n"
                                                    "mlp_only_layers = [0, -1]\n")
                                               .c_str(),
                                           "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:8:", "model.mlp_only_layers[1]", "-1"});
  expect_failure(rill_model_desc_from_toml((sizes + "num_experts = 4\nnum_experts_per_tok = 2\n"
                                                    "mlp_only_layers = [0, 5]\n")
                                               .c_str(),
                                           "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:8:", "model.mlp_only_layers[1]", "num_layers - 1 = 1, got 5"});
  expect_failure(rill_model_desc_from_toml((sizes + "mlp_only_layers = 1\n").c_str(), "m.toml", &d),
                 RILL_ERROR_CONFIG, {"m.toml:6:", "model.mlp_only_layers", "an array of integers"});

  // Qwen2-MoE style: 4 experts of width 12 (moe_intermediate_size 0 = 24 for
  // Mixtral's layout below), top-2, a shared expert of width 20.
  rill_model_desc moe = small_desc();
  moe.num_experts = 4;
  moe.num_experts_per_tok = 2;
  moe.moe_intermediate_size = 12;
  moe.shared_expert_intermediate_size = 20;
  std::mt19937 gen(5);
  std::normal_distribution<float> dist(0.0f, 0.25f);
  std::vector<std::pair<std::string, std::vector<int64_t>>> names;
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {"self_attn.q_proj.weight", {16, 16}}, {"self_attn.q_proj.bias", {16}},
             {"self_attn.k_proj.weight", {8, 16}}, {"self_attn.k_proj.bias", {8}},
             {"self_attn.v_proj.weight", {8, 16}}, {"self_attn.v_proj.bias", {8}},
             {"self_attn.o_proj.weight", {16, 16}}, {"input_layernorm.weight", {16}},
             {"post_attention_layernorm.weight", {16}}, {"mlp.gate.weight", {4, 16}},
             {"mlp.shared_expert.gate_proj.weight", {20, 16}}, {"mlp.shared_expert.up_proj.weight", {20, 16}},
             {"mlp.shared_expert.down_proj.weight", {16, 20}}, {"mlp.shared_expert_gate.weight", {1, 16}}}) {
      names.emplace_back(p + name, shape);
    }
    for (int e = 0; e < 4; ++e) {
      const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
      names.emplace_back(x + "gate_proj.weight", std::vector<int64_t>{12, 16});
      names.emplace_back(x + "up_proj.weight", std::vector<int64_t>{12, 16});
      names.emplace_back(x + "down_proj.weight", std::vector<int64_t>{16, 12});
    }
  }
  names.emplace_back("model.norm.weight", std::vector<int64_t>{16});
  std::vector<std::vector<float>> values;
  for (const auto& [name, shape] : names) {
    size_t n = 1;
    for (int64_t s : shape) n *= static_cast<size_t>(s);
    std::vector<float> v(n);
    const bool norm = name.find("norm") != std::string::npos;
    for (float& x : v) x = (norm ? 1.0f : 0.0f) + dist(gen);
    values.push_back(std::move(v));
  }
  auto set = [](rill_model* m, const std::string& name, const std::vector<int64_t>& shape, const float* data) {
    size_t n = 1;
    for (int64_t s : shape) n *= static_cast<size_t>(s);
    return rill_model_set_weight(m, name.c_str(), RILL_DTYPE_F32, static_cast<int32_t>(shape.size()), shape.data(),
                                 data, n * sizeof(float));
  };
  const std::vector<float> x = random_tokens(6, 9);
  std::vector<float> outputs[2];
  for (int threads : {1, 3}) {
    const std::string config = "[runtime]\nbackend = \"cpu\"\n[backend.cpu]\nthreads = " + std::to_string(threads) +
                               "\n";
    Fixture f(moe, config.c_str());
    for (size_t i = 0; i < names.size(); ++i) {
      REQUIRE_MESSAGE(set(f.model, names[i].first, names[i].second, values[i].data()) == RILL_OK, rill_last_error());
    }
    outputs[threads == 3] = f.forward(nullptr, 2, 3, x);
    if (threads == 3) continue;
    const std::vector<float> wrong(3 * 16);
    expect_failure(set(f.model, "model.layers.0.mlp.gate.weight", {3, 16}, wrong.data()), RILL_ERROR_SHAPE,
                   {"model.layers.0.mlp.gate.weight", "[4, 16]", "[3, 16]"});
    expect_failure(set(f.model, "model.layers.0.mlp.up_proj.weight", {24, 16}, wrong.data()), RILL_ERROR_NOT_FOUND,
                   {"no weight 'model.layers.0.mlp.up_proj.weight'"});
    expect_failure(set(f.model, "model.layers.0.mlp.gate_up_proj.weight", {48, 16}, wrong.data()),
                   RILL_ERROR_NOT_FOUND, {"mixture of 4 experts"});
  }
  CHECK(outputs[0] == outputs[1]);  // bitwise, for any thread count
  for (float v : outputs[0]) REQUIRE(std::isfinite(v));

  // Mixtral's names (no shared expert) hold the same weights as the canonical ones.
  moe.shared_expert_intermediate_size = 0;
  moe.moe_intermediate_size = 0;  // = intermediate_size 24
  Fixture canonical(moe), mixtral(moe);
  std::vector<float> a(24 * 16), b(16 * 24), router(4 * 16);
  for (auto* v : {&a, &b, &router}) {
    for (float& e : *v) e = dist(gen);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i].first;
    if (name.find("mlp.") != std::string::npos) continue;
    REQUIRE(set(canonical.model, name, names[i].second, values[i].data()) == RILL_OK);
    REQUIRE(set(mixtral.model, name, names[i].second, values[i].data()) == RILL_OK);
  }
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    REQUIRE(set(canonical.model, p + "mlp.gate.weight", {4, 16}, router.data()) == RILL_OK);
    REQUIRE_MESSAGE(set(mixtral.model, p + "block_sparse_moe.gate.weight", {4, 16}, router.data()) == RILL_OK,
                    rill_last_error());
    for (int e = 0; e < 4; ++e) {
      // Each expert's gate, up and down from shifted rows of a and b.
      const std::string ours = p + "mlp.experts." + std::to_string(e) + ".";
      const std::string theirs = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
      std::vector<float> gate(a), up(a), down(b);
      std::rotate(gate.begin(), gate.begin() + 16 * (e + 1), gate.end());
      std::rotate(up.begin(), up.begin() + 16 * (2 * e + 3), up.end());
      std::rotate(down.begin(), down.begin() + 24 * (e + 5), down.end());
      REQUIRE(set(canonical.model, ours + "gate_proj.weight", {24, 16}, gate.data()) == RILL_OK);
      REQUIRE(set(canonical.model, ours + "up_proj.weight", {24, 16}, up.data()) == RILL_OK);
      REQUIRE(set(canonical.model, ours + "down_proj.weight", {16, 24}, down.data()) == RILL_OK);
      REQUIRE_MESSAGE(set(mixtral.model, theirs + "w1.weight", {24, 16}, gate.data()) == RILL_OK, rill_last_error());
      REQUIRE(set(mixtral.model, theirs + "w3.weight", {24, 16}, up.data()) == RILL_OK);
      REQUIRE(set(mixtral.model, theirs + "w2.weight", {16, 24}, down.data()) == RILL_OK);
    }
  }
  const std::vector<float> y = canonical.forward(nullptr, 2, 3, x);
  CHECK(mixtral.forward(nullptr, 2, 3, x) == y);
  CHECK(y != x);
}

TEST_CASE("mixture of experts: equal router logits choose the lowest experts") {
  // A zero router gives every expert the same logit. Experts whose down_proj
  // is zero add nothing, so the output shows which two of four were chosen.
  rill_model_desc moe = small_desc();
  moe.num_experts = 4;
  moe.num_experts_per_tok = 2;
  auto run = [&](bool low_experts_live, bool high_experts_live) {
    Fixture f(moe);
    std::mt19937 same(7);  // the same weights in every model
    std::normal_distribution<float> dist(0.0f, 0.25f);
    auto set = [&](const std::string& name, std::vector<int64_t> shape, float offset, bool zero = false) {
      size_t n = 1;
      for (int64_t d : shape) n *= static_cast<size_t>(d);
      std::vector<float> v(n);
      for (float& x : v) {
        x = offset + dist(same);  // drawn either way, so the later weights stay the same
        if (zero) x = 0.0f;
      }
      REQUIRE_MESSAGE(rill_model_set_weight(f.model, name.c_str(), RILL_DTYPE_F32, static_cast<int32_t>(shape.size()),
                                            shape.data(), v.data(), n * sizeof(float)) == RILL_OK,
                      rill_last_error());
    };
    for (int layer = 0; layer < 2; ++layer) {
      const std::string p = "model.layers." + std::to_string(layer) + ".";
      set(p + "self_attn.q_proj.weight", {16, 16}, 0);
      set(p + "self_attn.q_proj.bias", {16}, 0);
      set(p + "self_attn.k_proj.weight", {8, 16}, 0);
      set(p + "self_attn.k_proj.bias", {8}, 0);
      set(p + "self_attn.v_proj.weight", {8, 16}, 0);
      set(p + "self_attn.v_proj.bias", {8}, 0);
      set(p + "self_attn.o_proj.weight", {16, 16}, 0);
      set(p + "input_layernorm.weight", {16}, 1);
      set(p + "post_attention_layernorm.weight", {16}, 1);
      set(p + "mlp.gate.weight", {4, 16}, 0, /*zero=*/true);
      for (int e = 0; e < 4; ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        set(x + "gate_proj.weight", {24, 16}, 0);
        set(x + "up_proj.weight", {24, 16}, 0);
        set(x + "down_proj.weight", {16, 24}, 0, /*zero=*/!(e < 2 ? low_experts_live : high_experts_live));
      }
    }
    set("model.norm.weight", {16}, 1);
    return f.forward(nullptr, 1, 4, random_tokens(4, 13));
  };
  const std::vector<float> none = run(false, false);
  CHECK(run(false, true) == none);  // experts 2 and 3 are never chosen
  CHECK(run(true, false) != none);
  CHECK(run(true, true) == run(true, false));
}

TEST_CASE("forward: argument and cache checks") {
  Fixture f(small_desc());
  f.set_all_weights();
  const int64_t wrong_d[3] = {1, 2, 8};
  rill_tensor* narrow = nullptr;
  REQUIRE(rill_tensor_create(f.ctx, RILL_DTYPE_F32, 3, wrong_d, &narrow) == RILL_OK);
  f.tensors.push_back(narrow);
  expect_failure(rill_model_forward(f.model, nullptr, narrow, nullptr, 0), RILL_ERROR_SHAPE, {"hidden", "16"});
  const int64_t bf16_shape[3] = {1, 2, 16};
  rill_tensor* bf16 = nullptr;
  REQUIRE(rill_tensor_create(f.ctx, RILL_DTYPE_BF16, 3, bf16_shape, &bf16) == RILL_OK);
  f.tensors.push_back(bf16);
  expect_failure(rill_model_forward(f.model, nullptr, bf16, nullptr, 0), RILL_ERROR_DTYPE, {"hidden", "bf16"});

  rill_tensor* h = f.hidden(2, 3, std::vector<float>(96, 0.5f));
  const int32_t negative[6] = {0, 1, 2, 0, -1, 2};
  expect_failure(rill_model_forward(f.model, nullptr, h, negative, 6), RILL_ERROR_INVALID_ARGUMENT, {"positions[4]"});
  expect_failure(rill_model_forward(f.model, nullptr, h, negative, 5), RILL_ERROR_INVALID_ARGUMENT, {"position_count"});
  rill_kv_cache* one = f.cache(1, 8);
  expect_failure(rill_model_forward(f.model, one, h, nullptr, 0), RILL_ERROR_INVALID_ARGUMENT, {"cache", "B = 2"});
  rill_kv_cache* small = f.cache(2, 4);
  REQUIRE(rill_model_forward(f.model, small, h, nullptr, 0) == RILL_OK);
  CHECK(cached_tokens(small, 0) == 3);
  CHECK(cached_tokens(small, 1) == 3);
  expect_failure(rill_model_forward(f.model, small, h, nullptr, 0), RILL_ERROR_INVALID_ARGUMENT,
                 {"past the cache's end", "sequence 0", "capacity of 4"});
  CHECK(cached_tokens(small, 0) == 3);  // unchanged by the failure
  expect_failure(rill_kv_cache_set_length(small, 0, 4), RILL_ERROR_INVALID_ARGUMENT, {"length", "3"});
  expect_failure(rill_kv_cache_set_length(small, 2, 0), RILL_ERROR_INVALID_ARGUMENT, {"sequence"});
  rill_kv_cache* bad = nullptr;
  expect_failure(rill_kv_cache_create(f.model, 0, 4, &bad), RILL_ERROR_INVALID_ARGUMENT, {"batch"});
  expect_failure(rill_kv_cache_create(f.model, 1, 0, &bad), RILL_ERROR_INVALID_ARGUMENT, {"capacity"});

  Fixture other(small_desc());
  rill_kv_cache* foreign = other.cache(2, 8);
  expect_failure(rill_model_forward(f.model, foreign, h, nullptr, 0), RILL_ERROR_INVALID_ARGUMENT,
                 {"cache", "another model"});
}

// rill.h's rule: destroy the objects of a context first, in any order, or only
// the context, which releases what is left. Each order must be clean under
// ASan and LSan (no double free, no leak); the sanitizer build runs this.
TEST_CASE("destroy order: objects then context, or the context alone") {
  Fixture f(small_desc());
  f.set_all_weights();
  rill_kv_cache* cache = f.cache(2, 8);
  f.forward(cache, 2, 3, random_tokens(6, 4));  // the model now holds scratch tensors too
  rill_tensor* loose = f.hidden(1, 1, {});
  // The fixture's destructor must not destroy what a subcase destroys itself.
  f.tensors.clear();
  f.caches.clear();

  SUBCASE("cache, model, tensor, context") {
    rill_kv_cache_destroy(cache);
    rill_model_destroy(f.model);
    rill_tensor_destroy(loose);
  }
  SUBCASE("model before its cache, then tensor, context") {
    rill_model_destroy(f.model);
    rill_kv_cache_destroy(cache);
    rill_tensor_destroy(loose);
  }
  SUBCASE("context alone") {}
  SUBCASE("context with only a model left") {
    rill_kv_cache_destroy(cache);
    rill_tensor_destroy(loose);
  }
  SUBCASE("context with only a cache left") {
    rill_model_destroy(f.model);
  }
  rill_context_destroy(f.ctx);
  f.model = nullptr;
  f.ctx = nullptr;
}

TEST_CASE("kv cache length: status and message, and the deprecated accessor") {
  Fixture f(small_desc());
  f.set_all_weights();
  rill_kv_cache* cache = f.cache(2, 8);
  f.forward(cache, 2, 3, random_tokens(6, 3));
  int32_t tokens = 99;
  expect_failure(rill_kv_cache_get_length(nullptr, 0, &tokens), RILL_ERROR_INVALID_ARGUMENT,
                 {"rill_kv_cache_get_length", "cache", "NULL"});
  expect_failure(rill_kv_cache_get_length(cache, 2, &tokens), RILL_ERROR_INVALID_ARGUMENT,
                 {"sequence", "0 to 1", "got 2"});
  expect_failure(rill_kv_cache_get_length(cache, -1, &tokens), RILL_ERROR_INVALID_ARGUMENT, {"sequence", "got -1"});
  expect_failure(rill_kv_cache_get_length(cache, 0, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"out_length"});
  CHECK(tokens == 99);  // untouched by the failures
  REQUIRE(rill_kv_cache_get_length(cache, 1, &tokens) == RILL_OK);
  CHECK(tokens == 3);
  REQUIRE(rill_kv_cache_set_length(cache, 1, 1) == RILL_OK);
  CHECK(cached_tokens(cache, 1) == 1);
  CHECK(cached_tokens(cache, 0) == 3);

  // The old entry point keeps working: the length, or -1.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  CHECK(rill_kv_cache_length(cache, 0) == 3);
  CHECK(rill_kv_cache_length(cache, 1) == 1);
  CHECK(rill_kv_cache_length(cache, 2) == -1);
  CHECK(rill_kv_cache_length(nullptr, 0) == -1);
#pragma GCC diagnostic pop
}

TEST_CASE("a failure inside a layer object's tensor is reported once, with its context") {
  // [4096, INT32_MAX, 1, 2^20] f32 keys: 2^65 bytes, which overflow size_t.
  rill_model_desc wide = rill_test::model_desc(/*num_layers=*/1, /*hidden_size=*/1 << 20, /*num_heads=*/1,
                                               /*intermediate_size=*/8);
  Fixture f(wide);
  rill_kv_cache* cache = nullptr;
  expect_failure(rill_kv_cache_create(f.model, 4096, INT32_MAX, &cache), RILL_ERROR_SHAPE,
                 {"rill_kv_cache_create: layer 0: shape: the byte size of a f32 tensor", "overflows size_t"});
  // Composed by the runtime's tensor API, not read back from a public call's message.
  CHECK(std::string(rill_last_error()).find("rill_tensor_create") == std::string::npos);
  CHECK(cache == nullptr);
}

TEST_CASE("decode steps with per-sequence lengths equal separate prefills") {
  Fixture f(small_desc());
  f.set_all_weights();
  const std::vector<float> seq0 = random_tokens(6, 1), seq1 = random_tokens(6, 2);
  // Both sequences prefilled with 5 tokens, then sequence 1 cut back to 3 (as
  // if its last 2 were padding); one decode step each: sequence 0 at position
  // 5, sequence 1 at position 3.
  rill_kv_cache* cache = f.cache(2, 8);
  std::vector<float> both = slice(seq0, 0, 5);
  const std::vector<float> first1 = slice(seq1, 0, 5);
  both.insert(both.end(), first1.begin(), first1.end());
  f.forward(cache, 2, 5, both);
  REQUIRE(rill_kv_cache_set_length(cache, 1, 3) == RILL_OK);
  std::vector<float> step = slice(seq0, 5, 1);
  const std::vector<float> step1 = slice(seq1, 3, 1);
  step.insert(step.end(), step1.begin(), step1.end());
  const std::vector<float> decoded = f.forward(cache, 2, 1, step);
  CHECK(cached_tokens(cache, 0) == 6);
  CHECK(cached_tokens(cache, 1) == 4);

  // The same tokens as plain prefills without a cache: the last output row.
  const std::vector<float> plain0 = f.forward(nullptr, 1, 6, slice(seq0, 0, 6));
  const std::vector<float> plain1 = f.forward(nullptr, 1, 4, slice(seq1, 0, 4));
  check_close(slice(decoded, 0, 1), slice(plain0, 5, 1));
  check_close(slice(decoded, 1, 1), slice(plain1, 3, 1));
  // And the decode really depends on the cache: an empty cache gives another answer.
  rill_kv_cache* fresh = f.cache(2, 8);
  const std::vector<float> uncached = f.forward(fresh, 2, 1, step);
  double difference = 0;
  for (size_t i = 0; i < 16; ++i) difference = std::max(difference, std::fabs(double{uncached[i]} - decoded[i]));
  CHECK(difference > 1e-3);
}

TEST_CASE("norm_weight_offset is added once to each norm weight, and to nothing else") {
  // Norm weights w stored around 0 with offset 1 must act as 1 + w, which is
  // what the plain model gets (the f32 sums are the same, so the outputs are
  // equal bit for bit). small_desc() has q/k/v biases: an offset wrongly added
  // to them, or to a projection, changes the output.
  const std::vector<float> x = random_tokens(5, 4);
  Fixture plain(small_desc());
  plain.set_all_weights();
  const std::vector<float> expected = plain.forward(nullptr, 1, 5, x);
  rill_model_desc gemma = small_desc();
  gemma.norm_weight_offset = 1.0f;
  Fixture f(gemma);
  f.set_all_weights(0.0f);
  CHECK(f.forward(nullptr, 1, 5, x) == expected);
  f.set_all_weights(0.0f);  // setting the weights again starts from the values given
  CHECK(f.forward(nullptr, 1, 5, x) == expected);
  f.set_all_weights(1.0f);  // checkpoint weights already holding 1 + w are not Gemma's: now 2 + w
  CHECK(f.forward(nullptr, 1, 5, x) != expected);
}

TEST_CASE("norm_weight_offset reaches the QK norm weights, as Gemma 3 stores them") {
  const std::vector<float> x = random_tokens(5, 4);
  rill_model_desc desc = small_desc();
  desc.qk_norm = RILL_QK_NORM_HEAD;
  Fixture plain(desc);
  plain.set_all_weights(1.0f, true);
  const std::vector<float> expected = plain.forward(nullptr, 1, 5, x);
  desc.norm_weight_offset = 1.0f;
  Fixture f(desc);
  f.set_all_weights(0.0f, true);
  CHECK(f.forward(nullptr, 1, 5, x) == expected);
}

TEST_CASE("RoPE positions are relative: shifting every position leaves the output unchanged") {
  Fixture f(small_desc());
  f.set_all_weights();
  const std::vector<float> x = random_tokens(5, 3);
  const std::vector<float> base = f.forward(nullptr, 1, 5, x);
  rill_tensor* h = f.hidden(1, 5, x);
  const int32_t shifted[5] = {100, 101, 102, 103, 104}, scrambled[5] = {0, 3, 1, 7, 2};
  REQUIRE(rill_model_forward(f.model, nullptr, h, shifted, 5) == RILL_OK);
  std::vector<float> out(x.size());
  REQUIRE(rill_tensor_read_f32(h, out.data(), out.size()) == RILL_OK);
  check_close(out, base);
  REQUIRE(rill_tensor_write_f32(h, x.data(), x.size()) == RILL_OK);
  REQUIRE(rill_model_forward(f.model, nullptr, h, scrambled, 5) == RILL_OK);
  REQUIRE(rill_tensor_read_f32(h, out.data(), out.size()) == RILL_OK);
  double difference = 0;
  for (size_t i = 16; i < out.size(); ++i) difference = std::max(difference, std::fabs(double{out[i]} - base[i]));
  CHECK(difference > 1e-3);
}

TEST_CASE("attention: more key slots than an int32 kv length can count is refused, not truncated") {
  // kv_lengths NULL means "S keys", handed to the backend as int32; S = 2^31
  // (two 4 GiB f16 buffers, never touched) must not wrap to a negative length.
  rill_test::ScopedContext c;
  rill_tensor* q = c.tensor({1, 1, 1, 1}, RILL_DTYPE_F16);
  rill_tensor* out = c.tensor({1, 1, 1, 1}, RILL_DTYPE_F16);
  rill_tensor* k = c.tensor({1, int64_t{1} << 31, 1, 1}, RILL_DTYPE_F16);
  rill_tensor* v = c.tensor({1, int64_t{1} << 31, 1, 1}, RILL_DTYPE_F16);
  expect_failure(rill_attention(c.ctx, q, k, v, nullptr, 0, 1.0f, out), RILL_ERROR_SHAPE, {"k", "2147483648"});
  for (rill_tensor* t : {q, out, k, v}) rill_tensor_destroy(t);
}

#ifdef RILL_FAKE_PLUGIN_DIR
TEST_CASE("a backend without the layer ops: RILL_ERROR_UNSUPPORTED naming backend and op") {
  const std::string config =
      std::string("[runtime]\nbackend = \"fakehost\"\nplugin_dir = \"") + RILL_FAKE_PLUGIN_DIR + "\"\n";
  Fixture f(small_desc(), config.c_str());
  f.set_all_weights();
  rill_tensor* h = f.hidden(1, 2, std::vector<float>(32, 0.5f));
  expect_failure(rill_model_forward(f.model, nullptr, h, nullptr, 0), RILL_ERROR_UNSUPPORTED, {"fakehost", "gemm"});
  const int64_t shape[3] = {2, 1, 4};
  rill_tensor* x = nullptr;
  REQUIRE(rill_tensor_create(f.ctx, RILL_DTYPE_F32, 3, shape, &x) == RILL_OK);
  f.tensors.push_back(x);
  const int32_t positions[2] = {0, 1};
  expect_failure(rill_rope(f.ctx, x, positions, 2, 10000.0f, 4), RILL_ERROR_UNSUPPORTED, {"fakehost", "rope"});
  const float freqs[2] = {1.0f, 0.01f};
  expect_failure(rill_rope_freqs(f.ctx, x, positions, 2, freqs, 2, 1.0f, 4), RILL_ERROR_UNSUPPORTED,
                 {"fakehost", "rope_freqs"});
  expect_failure(rill_activation(f.ctx, RILL_ACT_RELU, x, nullptr, x), RILL_ERROR_UNSUPPORTED,
                 {"fakehost", "activation"});
}

// The fakecaps backend (interface version 3) counts the ops it runs and
// refuses attention with head_dim above 4 through its capability query.
int fakecaps_ops_called() {
  const std::string path = std::string(RILL_FAKE_PLUGIN_DIR) + "/librill-fakecaps.so";
  void* plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE_MESSAGE(plugin != nullptr, "the runtime has not loaded ", path);
  const auto* called = static_cast<const int*>(dlsym(plugin, "fake_ops_called"));
  REQUIRE(called != nullptr);
  const int value = *called;
  dlclose(plugin);
  return value;
}

const std::string kFakecapsConfig =
    std::string("[runtime]\nbackend = \"fakecaps\"\nplugin_dir = \"") + RILL_FAKE_PLUGIN_DIR + "\"\n";

// A forward pass of desc (small_desc()'s weights) on fakecaps is refused with
// every needle in the message, before the backend runs any op.
void expect_refused_before_ops(const rill_model_desc& desc, const std::vector<std::string>& needles) {
  Fixture f(desc, kFakecapsConfig.c_str());
  f.set_all_weights();
  rill_tensor* h = f.hidden(1, 2, std::vector<float>(32, 0.5f));
  const int before = fakecaps_ops_called();
  expect_failure(rill_model_forward(f.model, nullptr, h, nullptr, 0), RILL_ERROR_UNSUPPORTED, needles);
  CHECK_MESSAGE(fakecaps_ops_called() == before, "ops ran before the refusal");
}

TEST_CASE("a backend's capability query refuses a model before any op is queued") {
  // The same weight shapes as small_desc(), with head_dim 8 over 2 query heads.
  rill_model_desc wide = small_desc();
  wide.num_heads = 2;
  wide.num_kv_heads = 1;
  wide.head_dim = 8;
  expect_refused_before_ops(wide, {"rill_model_forward", "fakecaps", "attention", "head_dim", "at most 4", "given 8"});
  // A sliding window or soft-cap needs attention_ex, which fakecaps lacks.
  for (const auto& edit : {+[](rill_model_desc& d) { d.sliding_window = 1; },
                           +[](rill_model_desc& d) { d.attn_logit_softcapping = 30.0f; }}) {
    rill_model_desc windowed = small_desc();
    edit(windowed);
    expect_refused_before_ops(windowed, {"rill_model_forward", "fakecaps", "does not implement the op attention_ex"});
  }
  // Rope scaling runs as rope_freqs, which fakecaps lacks.
  rill_model_desc scaled = small_desc();
  scaled.rope_type = RILL_ROPE_LINEAR;
  scaled.rope_factor = 4;
  expect_refused_before_ops(scaled, {"rill_model_forward", "fakecaps", "does not implement the op rope_freqs"});
  // clip_qkv runs as clamp (interface version 5), which fakecaps (version 3) lacks.
  rill_model_desc clipped = small_desc();
  clipped.clip_qkv = 8.0f;
  expect_refused_before_ops(clipped,
                            {"rill_model_forward", "fakecaps", "interface version 3", "does not implement the op clamp"});
  // head_dim 4 is within the limit: the forward pass runs the ops.
  Fixture f(small_desc(), kFakecapsConfig.c_str());
  f.set_all_weights();
  rill_tensor* h = f.hidden(1, 2, std::vector<float>(32, 0.5f));
  const int before = fakecaps_ops_called();
  CHECK_MESSAGE(rill_model_forward(f.model, nullptr, h, nullptr, 0) == RILL_OK, rill_last_error());
  CHECK(fakecaps_ops_called() > before);
}
#endif
