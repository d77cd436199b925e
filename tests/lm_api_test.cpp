// The language-model API (rill_lm_*): loading a small Hugging Face folder
// written here, the info it reports, the argument checks of every entry
// point, and logits that agree across last_only, batching and the KV cache.
// The numbers themselves are checked against transformers in
// tests/torch/lm_reference.py.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

#include "rill.h"
#include "rill.hpp"
#include "safetensors_file.h"
#include "test_helpers.h"

using rill_test::expect_failure;

static_assert(offsetof(rill_lm_load_options, struct_size) == 0);
static_assert(offsetof(rill_lm_load_options, override_dtype) == 4);
static_assert(offsetof(rill_lm_load_options, dtype) == 8);
static_assert(offsetof(rill_lm_load_options, weight_format) == 12);
static_assert(offsetof(rill_lm_load_options, copy_weights) == 16);
static_assert(offsetof(rill_lm_info, struct_size) == 0);
static_assert(offsetof(rill_lm_info, vocab_size) == 4);
static_assert(offsetof(rill_lm_info, hidden_size) == 8);
static_assert(offsetof(rill_lm_info, num_layers) == 12);
static_assert(offsetof(rill_lm_info, max_position_embeddings) == 16);
static_assert(offsetof(rill_lm_info, dtype) == 20);
static_assert(offsetof(rill_lm_info, bos_token_id) == 24);
static_assert(offsetof(rill_lm_info, eos_token_count) == 28);
static_assert(offsetof(rill_lm_info, eos_token_ids) == 32);
static_assert(offsetof(rill_lm_info, do_sample) == 64);
static_assert(offsetof(rill_lm_info, temperature) == 68);
static_assert(offsetof(rill_lm_info, top_k) == 72);
static_assert(offsetof(rill_lm_info, top_p) == 76);
static_assert(offsetof(rill_lm_info, min_p) == 80);
static_assert(offsetof(rill_lm_info, repetition_penalty) == 84);
static_assert(offsetof(rill_lm_info, model_type) == 88);
static_assert(offsetof(rill_lm_info, weight_bytes) == 152);
static_assert(offsetof(rill_lm_info, weight_bytes_mapped) == 160);
static_assert(sizeof(rill_lm_info) == 168);

namespace {

constexpr int kVocab = 8, kHidden = 4;

// A one-layer Llama (hidden 4 unless given, one head, vocab 8) with weights
// from a fixed pseudo-random sequence, as a Hugging Face folder.
std::string write_folder(const char* name, int hidden = kHidden) {
  const std::string folder = rill_test::scratch_path("rill_lm_api_test_", name);
  ::mkdir(folder.c_str(), 0755);
  rill_test::write_text_file(folder + "/config.json",
             R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 8, "hidden_size": )" +
                 std::to_string(hidden) + R"(, "intermediate_size": )" + std::to_string(hidden) +
                 R"(, "num_hidden_layers": 1, "num_attention_heads": 1,
                 "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "bos_token_id": 1, "eos_token_id": 3,
                 "tie_word_embeddings": false, "torch_dtype": "float32"})");
  rill_test::write_text_file(folder + "/generation_config.json",
             R"({"eos_token_id": [2, 5], "do_sample": true, "temperature": 0.7, "top_k": 20})");
  const std::vector<std::pair<std::string, std::vector<int64_t>>> tensors = {
      {"model.embed_tokens.weight", {kVocab, hidden}},
      {"model.layers.0.self_attn.q_proj.weight", {hidden, hidden}},
      {"model.layers.0.self_attn.k_proj.weight", {hidden, hidden}},
      {"model.layers.0.self_attn.v_proj.weight", {hidden, hidden}},
      {"model.layers.0.self_attn.o_proj.weight", {hidden, hidden}},
      {"model.layers.0.mlp.gate_proj.weight", {hidden, hidden}},
      {"model.layers.0.mlp.up_proj.weight", {hidden, hidden}},
      {"model.layers.0.mlp.down_proj.weight", {hidden, hidden}},
      {"model.layers.0.input_layernorm.weight", {hidden}},
      {"model.layers.0.post_attention_layernorm.weight", {hidden}},
      {"model.norm.weight", {hidden}},
      {"lm_head.weight", {kVocab, hidden}},
  };
  const std::string bytes = rill_test::f32_safetensors(rill_test::random_f32_tensors(tensors, 12345, 1.0f));
  rill_test::write_text_file(folder + "/model.safetensors", bytes);
  return folder;
}

struct Loaded {
  rill_test::ScopedContext context;
  rill_lm* lm = nullptr;
  explicit Loaded(const std::string& folder, const rill_lm_load_options* options = nullptr) {
    REQUIRE_MESSAGE(rill_lm_load(context.ctx, folder.c_str(), options, &lm) == RILL_OK, rill_last_error());
  }
  ~Loaded() { rill_lm_destroy(lm); }
};

std::vector<float> logits(rill_lm* lm, rill_kv_cache* cache, int32_t batch, const std::vector<int32_t>& ids,
                          bool last_only) {
  const auto tokens = static_cast<int32_t>(ids.size() / static_cast<size_t>(batch));
  std::vector<float> out(static_cast<size_t>(last_only ? batch : batch * tokens) * kVocab);
  REQUIRE_MESSAGE(rill_lm_logits(lm, cache, batch, tokens, ids.data(), last_only ? 1 : 0, out.data(), out.size()) ==
                      RILL_OK,
                  rill_last_error());
  return out;
}

void check_close(const float* got, const float* expected, size_t count) {
  for (size_t i = 0; i < count; ++i) CHECK(std::fabs(got[i] - expected[i]) <= 1e-5f * (1 + std::fabs(expected[i])));
}

}  // namespace

TEST_CASE("rill_lm_load reads the folder's sizes, special ids and sampling defaults") {
  Loaded m(write_folder("info"));
  rill_lm_info info;
  info.struct_size = sizeof info;
  REQUIRE(rill_lm_get_info(m.lm, &info) == RILL_OK);
  CHECK(info.vocab_size == kVocab);
  CHECK(info.hidden_size == kHidden);
  CHECK(info.num_layers == 1);
  CHECK(info.max_position_embeddings == 32);
  CHECK(info.dtype == RILL_DTYPE_F32);
  CHECK(info.bos_token_id == 1);
  REQUIRE(info.eos_token_count == 2);  // generation_config.json's list wins over config.json's 3
  CHECK(info.eos_token_ids[0] == 2);
  CHECK(info.eos_token_ids[1] == 5);
  CHECK(info.do_sample == 1);
  CHECK(info.temperature == doctest::Approx(0.7));
  CHECK(info.top_k == 20);
  CHECK(info.top_p == 1.0f);
  CHECK(info.min_p == 0.0f);
  CHECK(info.repetition_penalty == 1.0f);
  CHECK(std::string(info.model_type) == "llama");
  CHECK(rill_lm_model(m.lm) != nullptr);
  CHECK(rill_lm_model(nullptr) == nullptr);
  rill_lm_destroy(nullptr);

  rill_lm_info small;  // only the fields inside struct_size are written
  small.struct_size = 8;
  small.hidden_size = -7;
  REQUIRE(rill_lm_get_info(m.lm, &small) == RILL_OK);
  CHECK(small.vocab_size == kVocab);
  CHECK(small.hidden_size == -7);
}

TEST_CASE("rill_lm_load: override_dtype picks the compute dtype") {
  rill_lm_load_options options;
  rill_lm_load_options_init(&options);
  CHECK(options.struct_size == sizeof options);
  CHECK(options.override_dtype == 0);
  options.override_dtype = 1;
  options.dtype = RILL_DTYPE_BF16;
  Loaded m(write_folder("bf16"), &options);
  rill_lm_info info;
  info.struct_size = sizeof info;
  REQUIRE(rill_lm_get_info(m.lm, &info) == RILL_OK);
  CHECK(info.dtype == RILL_DTYPE_BF16);
  const std::vector<float> out = logits(m.lm, nullptr, 1, {1, 2, 3}, false);
  for (float v : out) CHECK(std::isfinite(v));
}

TEST_CASE("rill_lm_load checks its arguments") {
  rill_test::ScopedContext c;
  const std::string folder = write_folder("args");
  rill_lm* lm = nullptr;
  expect_failure(rill_lm_load(nullptr, folder.c_str(), nullptr, &lm), RILL_ERROR_INVALID_ARGUMENT, {"ctx"});
  expect_failure(rill_lm_load(c.ctx, nullptr, nullptr, &lm), RILL_ERROR_INVALID_ARGUMENT, {"path"});
  expect_failure(rill_lm_load(c.ctx, folder.c_str(), nullptr, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"out"});
  rill_lm_load_options options;
  rill_lm_load_options_init(&options);
  options.struct_size = 0;
  expect_failure(rill_lm_load(c.ctx, folder.c_str(), &options, &lm), RILL_ERROR_INVALID_ARGUMENT,
                 {"options->struct_size"});
  rill_lm_load_options_init(&options);
  options.override_dtype = 1;
  options.dtype = static_cast<rill_dtype>(10);
  expect_failure(rill_lm_load(c.ctx, folder.c_str(), &options, &lm), RILL_ERROR_INVALID_ARGUMENT,
                 {"options->dtype", "10"});
  rill_lm_load_options_init(&options);
  CHECK(options.weight_format == RILL_DTYPE_F32);
  options.weight_format = RILL_DTYPE_F16;
  expect_failure(rill_lm_load(c.ctx, folder.c_str(), &options, &lm), RILL_ERROR_INVALID_ARGUMENT,
                 {"options->weight_format", "RILL_DTYPE_F16", "override_dtype"});
  // Rows of kHidden = 4 elements are no whole Q8_0 block: refused by weight name, nothing kept.
  options.weight_format = RILL_DTYPE_Q8_0;
  expect_failure(rill_lm_load(c.ctx, folder.c_str(), &options, &lm), RILL_ERROR_SHAPE,
                 {"model.layers.0.self_attn.q_proj.weight", "q8_0", "multiple of 32"});
  expect_failure(rill_lm_load(c.ctx, (folder + "_absent").c_str(), nullptr, &lm), RILL_ERROR_IO,
                 {"config.json", "cannot open"});
  CHECK(lm == nullptr);
  rill_lm_info info;
  info.struct_size = sizeof info;
  expect_failure(rill_lm_get_info(nullptr, &info), RILL_ERROR_INVALID_ARGUMENT, {"lm"});
}

TEST_CASE("rill_lm_load: a JSON number too large for a double is refused by file, not an internal error") {
  rill_test::ScopedContext c;
  rill_lm* lm = nullptr;
  const std::string config_folder = write_folder("overflow_config");
  rill_test::write_text_file(config_folder + "/config.json", R"({"model_type": "llama", "rms_norm_eps": 1e706})");
  expect_failure(rill_lm_load(c.ctx, config_folder.c_str(), nullptr, &lm), RILL_ERROR_CONFIG,
                 {"config.json", "not valid JSON", "1e706"});
  const std::string index_folder = write_folder("overflow_index");
  std::remove((index_folder + "/model.safetensors").c_str());
  rill_test::write_text_file(index_folder + "/model.safetensors.index.json",
                             R"({"metadata": {"total_size": 1e706}, "weight_map": {"lm_head.weight": "a.safetensors"}})");
  expect_failure(rill_lm_load(c.ctx, index_folder.c_str(), nullptr, &lm), RILL_ERROR_IO,
                 {"model.safetensors.index.json", "not valid JSON", "1e706"});
  CHECK(lm == nullptr);
}

#ifdef RILL_FAKE_PLUGIN_DIR
TEST_CASE("rill_lm_load: a backend without block formats refuses a block weight_format by backend and dtype") {
  // Rows of 32 elements: whole Q8_0 and Q4_0 blocks. fakecaps speaks interface
  // version 3 and fakehost version 1, before block dtypes existed.
  const std::string folder = write_folder("blocks", 32);
  for (const char* backend : {"fakecaps", "fakehost"}) {
    rill_test::ScopedContext c(std::string("[runtime]\nbackend = \"") + backend + "\"\nplugin_dir = \"" +
                               RILL_FAKE_PLUGIN_DIR + "\"\n");
    rill_lm_load_options options;
    rill_lm_load_options_init(&options);
    for (const rill_dtype format : {RILL_DTYPE_Q8_0, RILL_DTYPE_Q4_0}) {
      options.weight_format = format;
      rill_lm* lm = nullptr;
      expect_failure(rill_lm_load(c.ctx, folder.c_str(), &options, &lm), RILL_ERROR_UNSUPPORTED,
                     {"rill_lm_load", backend, rill_dtype_name(format), "block formats need version 4"});
      CHECK(lm == nullptr);
    }
    // The context is intact: the same folder loads with float matrices.
    options.weight_format = RILL_DTYPE_F32;
    rill_lm* lm = nullptr;
    CHECK_MESSAGE(rill_lm_load(c.ctx, folder.c_str(), &options, &lm) == RILL_OK, rill_last_error());
    rill_lm_destroy(lm);
  }
  // Negative control: the CPU backend runs block weights, and loads the folder in Q8_0.
  rill_test::ScopedContext cpu;
  rill_lm_load_options options;
  rill_lm_load_options_init(&options);
  options.weight_format = RILL_DTYPE_Q8_0;
  rill_lm* lm = nullptr;
  CHECK_MESSAGE(rill_lm_load(cpu.ctx, folder.c_str(), &options, &lm) == RILL_OK, rill_last_error());
  rill_lm_destroy(lm);
}
#endif

#if defined(RILL_FAKE_PLUGIN_DIR) && defined(RILL_GGUF_SEEDS)
TEST_CASE("rill_lm_load: a backend without block formats refuses a Q8_0 GGUF file by backend and dtype") {
  // A one-layer llama of width 32 whose matrices and embedding are Q8_0
  // blocks, written by PyPI's gguf (a fuzz seed, tests/fuzz/make_gguf_seeds.py).
  const std::string q8_0 = std::string(RILL_GGUF_SEEDS) + "/llama_q8_0.gguf";
  const std::string f32 = std::string(RILL_GGUF_SEEDS) + "/llama_f32.gguf";
  for (const char* backend : {"fakecaps", "fakehost"}) {
    rill_test::ScopedContext c(std::string("[runtime]\nbackend = \"") + backend + "\"\nplugin_dir = \"" +
                               RILL_FAKE_PLUGIN_DIR + "\"\n");
    rill_lm* lm = nullptr;
    expect_failure(rill_lm_load(c.ctx, q8_0.c_str(), nullptr, &lm), RILL_ERROR_UNSUPPORTED,
                   {"rill_lm_load", "llama_q8_0.gguf", backend, "q8_0", "block formats need version 4"});
    CHECK(lm == nullptr);
    // The failed load left the context as it was: a float GGUF file loads.
    CHECK_MESSAGE(rill_lm_load(c.ctx, f32.c_str(), nullptr, &lm) == RILL_OK, rill_last_error());
    rill_lm_destroy(lm);
  }
  // Negative control: the CPU backend runs block weights and loads the file.
  rill_test::ScopedContext cpu;
  rill_lm* lm = nullptr;
  CHECK_MESSAGE(rill_lm_load(cpu.ctx, q8_0.c_str(), nullptr, &lm) == RILL_OK, rill_last_error());
  rill_lm_destroy(lm);
}
#endif

#if defined(RILL_GGUF_SEEDS)
namespace {

// The info, and the logits of four tokens, of a loaded model.
struct LoadedRun {
  rill_lm_info info{};
  std::vector<float> logits;
};
LoadedRun run_four_tokens(rill_lm* lm) {
  LoadedRun run;
  run.info.struct_size = sizeof run.info;
  REQUIRE_MESSAGE(rill_lm_get_info(lm, &run.info) == RILL_OK, rill_last_error());
  const int32_t ids[4] = {1, 5, 7, 3};
  run.logits.resize(4 * static_cast<size_t>(run.info.vocab_size));
  REQUIRE_MESSAGE(rill_lm_logits(lm, nullptr, 1, 4, ids, 0, run.logits.data(), run.logits.size()) == RILL_OK,
                  rill_last_error());
  return run;
}
LoadedRun load_and_run(rill_context* ctx, const std::string& path, uint32_t copy_weights) {
  rill_lm_load_options options;
  rill_lm_load_options_init(&options);
  options.copy_weights = copy_weights;
  rill_lm* lm = nullptr;
  REQUIRE_MESSAGE(rill_lm_load(ctx, path.c_str(), &options, &lm) == RILL_OK, rill_last_error());
  LoadedRun run = run_four_tokens(lm);
  rill_lm_destroy(lm);
  return run;
}

}  // namespace

TEST_CASE("rill_lm_load: a GGUF file's tensors are read in place from its map, with a copy's logits") {
  // The seeds of tests/fuzz/make_gguf_seeds.py, their bytes counted from its
  // shapes. llama_q8_0: width 32, ff 32, vocab 16, every matrix Q8_0 (a row
  // is one 34-byte block), three f32 norms of 32: all read in place but
  // q_proj and k_proj, whose rows the load reorders (llama.cpp's permutation).
  // llama_f16: width 8, ff 16, vocab 16, f16 matrices, so f16 is the compute
  // dtype and the f32 norms are converted: copied too.
  struct Seed {
    const char* file;
    uint64_t bytes, copied;
  };
  const Seed seeds[] = {
      {"llama_q8_0.gguf", (16 + 16 + 4 * 32 + 3 * 32) * 34 + 3 * 32 * 4, 2 * 32 * 34},
      {"llama_f16.gguf", (16 * 8 * 2 + 4 * 8 * 8 + 3 * 16 * 8 + 3 * 8) * 2, (2 * 8 * 8 + 3 * 8) * 2},
  };
  rill_test::ScopedContext cpu;
  for (const Seed& seed : seeds) {
    CAPTURE(seed.file);
    const std::string path = std::string(RILL_GGUF_SEEDS) + "/" + seed.file;
    const LoadedRun mapped = load_and_run(cpu.ctx, path, 0);
    const LoadedRun copied = load_and_run(cpu.ctx, path, 1);
    CHECK(mapped.info.weight_bytes == seed.bytes);
    CHECK(mapped.info.weight_bytes_mapped == seed.bytes - seed.copied);
    CHECK(copied.info.weight_bytes == seed.bytes);
    CHECK(copied.info.weight_bytes_mapped == 0);
    CHECK(mapped.logits == copied.logits);  // bitwise
  }
}

TEST_CASE("rill_lm_load: a folder's tensors in the compute dtype are read in place, also once the file is gone") {
  // write_folder's f32 tensors (8-byte aligned, as the safetensors library
  // pads), loaded as f32: all stored as given. Loaded as bf16: all converted.
  const std::string folder = write_folder("in_place");
  const uint64_t bytes = (2 * kVocab * kHidden + 7 * kHidden * kHidden + 3 * kHidden) * sizeof(float);
  rill_test::ScopedContext cpu;
  const LoadedRun copied = load_and_run(cpu.ctx, folder, 1);
  CHECK(copied.info.weight_bytes == bytes);
  CHECK(copied.info.weight_bytes_mapped == 0);
  rill_lm* lm = nullptr;
  REQUIRE_MESSAGE(rill_lm_load(cpu.ctx, folder.c_str(), nullptr, &lm) == RILL_OK, rill_last_error());
  REQUIRE(std::remove((folder + "/model.safetensors").c_str()) == 0);  // the map outlives the name
  const LoadedRun mapped = run_four_tokens(lm);
  rill_lm_destroy(lm);
  CHECK(mapped.info.weight_bytes_mapped == bytes);
  CHECK(mapped.logits == copied.logits);
  rill_lm_load_options options;
  rill_lm_load_options_init(&options);
  options.override_dtype = 1;
  options.dtype = RILL_DTYPE_BF16;
  (void)write_folder("in_place");
  REQUIRE_MESSAGE(rill_lm_load(cpu.ctx, folder.c_str(), &options, &lm) == RILL_OK, rill_last_error());
  rill_lm_info info{};
  info.struct_size = sizeof info;
  REQUIRE(rill_lm_get_info(lm, &info) == RILL_OK);
  CHECK(info.weight_bytes == bytes / 2);
  CHECK(info.weight_bytes_mapped == 0);
  rill_lm_destroy(lm);
}

TEST_CASE("rill_lm_load: a GGUF file's map lives as long as a model that reads it, shared or not") {
  const std::string path = std::string(RILL_GGUF_SEEDS) + "/llama_q8_0.gguf";
  rill_test::ScopedContext a, b;
  const LoadedRun copied = load_and_run(a.ctx, path, 1);
  rill_lm* source = nullptr;
  REQUIRE_MESSAGE(rill_lm_load(a.ctx, path.c_str(), nullptr, &source) == RILL_OK, rill_last_error());
  rill_lm* shared = nullptr;
  REQUIRE_MESSAGE(rill_lm_create_shared(b.ctx, source, &shared) == RILL_OK, rill_last_error());
  rill_lm_destroy(source);  // the shared model's tensors still read the map
  const LoadedRun run = run_four_tokens(shared);
  CHECK(run.info.weight_bytes_mapped > 0);
  CHECK(run.logits == copied.logits);
  rill_lm_destroy(shared);
}
#endif

TEST_CASE("rill_lm_logits checks its arguments and leaves the cache unchanged on failure") {
  Loaded m(write_folder("logits_args"));
  const int32_t ids[3] = {1, 2, 3};
  std::vector<float> out(3 * kVocab);
  expect_failure(rill_lm_logits(nullptr, nullptr, 1, 3, ids, 0, out.data(), out.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"lm"});
  expect_failure(rill_lm_logits(m.lm, nullptr, 0, 3, ids, 0, out.data(), out.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"batch", "got 0"});
  expect_failure(rill_lm_logits(m.lm, nullptr, 1, 0, ids, 0, out.data(), out.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"tokens", "got 0"});
  expect_failure(rill_lm_logits(m.lm, nullptr, 1, 3, nullptr, 0, out.data(), out.size()),
                 RILL_ERROR_INVALID_ARGUMENT, {"ids"});
  expect_failure(rill_lm_logits(m.lm, nullptr, 1, 3, ids, 0, nullptr, out.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"logits"});
  expect_failure(rill_lm_logits(m.lm, nullptr, 1, 3, ids, 0, out.data(), out.size() - 1),
                 RILL_ERROR_INVALID_ARGUMENT, {"logits_count", "expected 24", "got 23"});
  expect_failure(rill_lm_logits(m.lm, nullptr, 1, 3, ids, 1, out.data(), out.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"logits_count", "expected 8"});
  const int32_t bad[3] = {1, 8, 3};
  expect_failure(rill_lm_logits(m.lm, nullptr, 1, 3, bad, 0, out.data(), out.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"ids[1]", "got 8"});

  rill_kv_cache* cache = nullptr;
  REQUIRE(rill_kv_cache_create(rill_lm_model(m.lm), 1, 4, &cache) == RILL_OK);
  std::vector<float> two(2 * 3 * kVocab);
  const int32_t six[6] = {1, 2, 3, 1, 2, 3};
  expect_failure(rill_lm_logits(m.lm, cache, 2, 3, six, 0, two.data(), two.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"batch", "cache's batch 1"});
  REQUIRE(rill_lm_logits(m.lm, cache, 1, 3, ids, 0, out.data(), out.size()) == RILL_OK);
  int32_t length = 0;
  REQUIRE(rill_kv_cache_get_length(cache, 0, &length) == RILL_OK);
  CHECK(length == 3);
  expect_failure(rill_lm_logits(m.lm, cache, 1, 3, ids, 0, out.data(), out.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"past the cache's end"});
  REQUIRE(rill_kv_cache_get_length(cache, 0, &length) == RILL_OK);
  CHECK(length == 3);
  rill_kv_cache_destroy(cache);
}

TEST_CASE("rill_lm_logits: last_only, batches and decode steps agree with one prefill") {
  Loaded m(write_folder("agree"));
  const std::vector<int32_t> ids = {1, 4, 7, 0, 2};
  const std::vector<float> full = logits(m.lm, nullptr, 1, ids, false);
  const std::vector<float> last = logits(m.lm, nullptr, 1, ids, true);
  check_close(last.data(), full.data() + 4 * kVocab, kVocab);

  std::vector<int32_t> twice = ids;
  twice.insert(twice.end(), ids.begin(), ids.end());
  const std::vector<float> batched = logits(m.lm, nullptr, 2, twice, false);
  check_close(batched.data(), full.data(), full.size());
  check_close(batched.data() + full.size(), full.data(), full.size());

  rill_kv_cache* cache = nullptr;
  REQUIRE(rill_kv_cache_create(rill_lm_model(m.lm), 1, 8, &cache) == RILL_OK);
  const std::vector<float> prefill = logits(m.lm, cache, 1, {1, 4}, false);
  check_close(prefill.data(), full.data(), 2 * kVocab);
  for (size_t t = 2; t < ids.size(); ++t) {
    const std::vector<float> step = logits(m.lm, cache, 1, {ids[t]}, false);
    check_close(step.data(), full.data() + t * kVocab, kVocab);
  }
  rill_kv_cache_destroy(cache);
}

TEST_CASE("rill.hpp: LanguageModel loads, reports and computes logits with a cache") {
  const std::string folder = write_folder("hpp");
  rill::Context ctx(rill_test::kCpuConfig);
  rill::LanguageModel lm(ctx, folder);
  CHECK(lm.info().vocab_size == kVocab);
  const std::vector<float> full = lm.logits(nullptr, 1, {3, 1, 4});
  REQUIRE(full.size() == 3 * kVocab);
  rill::KvCache cache(lm.model(), 1, 4);
  lm.logits(&cache, 1, {3, 1});
  const std::vector<float> step = lm.logits(&cache, 1, {4}, true);
  check_close(step.data(), full.data() + 2 * kVocab, kVocab);
  CHECK(cache.length(0) == 3);
  try {
    lm.logits(nullptr, 1, {9});
    FAIL("an id out of range must throw");
  } catch (const rill::Error& e) {
    CHECK(e.status() == RILL_ERROR_INVALID_ARGUMENT);
  }
}
