// Fault injection over the C API (issue 16), as SQLite tests out-of-memory:
// for each entry point that allocates, the Nth host allocation (alloc_hook.h)
// or device allocation (the fake plugins' countdowns) fails, for N = 1, 2, ...
// until the call succeeds. Each failing call must return its documented
// status with a message, leave the objects it was given as they were and
// usable, and leak nothing (LeakSanitizer checks that in the sanitizer pass).
// Loads must be all-or-nothing: checked against what the model computed, or
// which weight it missed, before the failing call.
#include <dlfcn.h>
#include <sys/stat.h>
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "alloc_hook.h"
#include "fault_support.h"
#include "rill.h"
#include "test_helpers.h"

namespace {

using rill_fault::scratch_path;
using rill_fault::TinyModel;
using rill_fault::tiny_desc;
using rill_fault::walk_host;
using rill_fault::write_tiny_checkpoint;
using rill_test::expect_failure;

const std::string kFortune = RILL_FORTUNE_MODEL;
// A one-layer llama with its byte-level BPE tokenizer, and a SentencePiece
// vocabulary alone, written by PyPI's gguf (fuzz seeds).
const std::string kGgufLlama = RILL_GGUF_LLAMA;
const std::string kGgufSentencePiece = RILL_GGUF_SENTENCEPIECE;

std::string fake_config(const char* backend) {
  return std::string("[runtime]\nbackend = \"") + backend + "\"\nplugin_dir = '" + RILL_FAKE_PLUGIN_DIR + "'\n";
}

// A fake plugin's exported countdown (fake_fail_*_countdown), which the runtime has loaded.
int* plugin_countdown(const char* plugin, const char* name) {
  const std::string path = std::string(RILL_FAKE_PLUGIN_DIR) + "/librill-" + plugin + ".so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE_MESSAGE(handle != nullptr, "the runtime has not loaded ", path);
  auto* countdown = static_cast<int*>(dlsym(handle, name));
  REQUIRE(countdown != nullptr);
  dlclose(handle);  // the runtime still holds it
  return countdown;
}

// Writes a folder holding a byte-level BPE tokenizer.json of six tokens and a
// tokenizer_config.json that adds two tokens and a BOS; returns its path.
std::string write_tiny_tokenizer() {
  const std::string folder = scratch_path("tokenizer");
  mkdir(folder.c_str(), 0700);
  rill_test::write_text_file(folder + "/tokenizer.json", R"({
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                    "normalized": false, "special": true}],
  "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false,
            "vocab": {"<s>": 0, "a": 1, "b": 2, "ab": 3, "\u0120": 4, "\u0120ab": 5},
            "merges": ["a b", "\u0120 ab"]}
})");
  rill_test::write_text_file(folder + "/tokenizer_config.json", R"({
  "add_bos_token": true,
  "added_tokens_decoder": {
    "6": {"content": "</s>", "lstrip": false, "normalized": false, "rstrip": false, "single_word": false, "special": true},
    "7": {"content": "<pad>", "lstrip": false, "normalized": false, "rstrip": false, "single_word": false, "special": true}
  },
  "bos_token": "<s>"
})");
  return folder;
}

}  // namespace

TEST_CASE("host allocation failures: contexts, tensors, models, caches") {
  rill_context* ctx = nullptr;
  walk_host("rill_context_create (cpu)", [&] { return rill_context_create(rill_test::kCpuConfig, &ctx); },
            [&] { CHECK(ctx == nullptr); }, [&] { rill_context_destroy(ctx), ctx = nullptr; });
  rill_context_destroy(ctx), ctx = nullptr;
  // A pool of several workers: an allocation failing after some have started
  // must stop those, not end the process.
  walk_host("rill_context_create (cpu, 4 threads)",
            [&] { return rill_context_create("[runtime]\nbackend = \"cpu\"\n[backend.cpu]\nthreads = 4\n", &ctx); },
            [&] { CHECK(ctx == nullptr); }, [&] { rill_context_destroy(ctx), ctx = nullptr; });
  rill_context_destroy(ctx), ctx = nullptr;
  const std::string config_file = scratch_path("config.toml");
  rill_test::write_text_file(config_file, rill_test::kCpuConfig);
  walk_host("rill_context_create_from_file", [&] { return rill_context_create_from_file(config_file.c_str(), &ctx); },
            [&] { CHECK(ctx == nullptr); }, [&] { rill_context_destroy(ctx), ctx = nullptr; });
  rill_context_destroy(ctx), ctx = nullptr;
  std::remove(config_file.c_str());
  const std::string fake = fake_config("fakehost");
  walk_host("rill_context_create (plugin)", [&] { return rill_context_create(fake.c_str(), &ctx); },
            [&] { CHECK(ctx == nullptr); }, [&] { rill_context_destroy(ctx), ctx = nullptr; });
  rill_context_destroy(ctx), ctx = nullptr;

  TinyModel tiny;
  rill_tensor* t = nullptr;
  const int64_t shape[2] = {3, 5};
  walk_host("rill_tensor_create", [&] { return rill_tensor_create(tiny.context.ctx, RILL_DTYPE_F32, 2, shape, &t); },
            [&] { CHECK(t == nullptr); }, [&] { rill_tensor_destroy(t), t = nullptr; });
  rill_tensor_destroy(t);

  rill_model* model = nullptr;
  const rill_model_desc d = tiny_desc();
  walk_host("rill_model_create", [&] { return rill_model_create(tiny.context.ctx, &d, &model); },
            [&] { CHECK(model == nullptr); }, [&] { rill_model_destroy(model), model = nullptr; });
  rill_model_destroy(model);

  rill_kv_cache* cache = nullptr;
  walk_host("rill_kv_cache_create", [&] { return rill_kv_cache_create(tiny.model, 2, 8, &cache); },
            [&] { CHECK(cache == nullptr); }, [&] { rill_kv_cache_destroy(cache), cache = nullptr; });
  rill_kv_cache_destroy(cache);
}

TEST_CASE("host allocation failures: loads are all-or-nothing") {
  const std::string a = write_tiny_checkpoint("a.safetensors", 0.1f);
  const std::string b = write_tiny_checkpoint("b.safetensors", -0.2f);
  TinyModel expected_b;
  REQUIRE(rill_model_load_safetensors(expected_b.model, b.c_str()) == RILL_OK);
  const std::vector<float> out_b = expected_b.run();

  TinyModel tiny;
  // Into an empty model: a failed load sets no weight.
  const std::string none_set = tiny.missing();
  walk_host("rill_model_load_safetensors (empty model)", [&] { return rill_model_load_safetensors(tiny.model, a.c_str()); },
            [&] { CHECK(tiny.missing() == none_set); }, [] {});
  // Over a loaded model: a failed load leaves every weight of the first.
  const std::vector<float> out_a = tiny.run();
  REQUIRE(out_a != out_b);
  walk_host("rill_model_load_safetensors (replacing)", [&] { return rill_model_load_safetensors(tiny.model, b.c_str()); },
            [&] { CHECK(tiny.run() == out_a); }, [] {});
  CHECK(tiny.run() == out_b);

  // A fused tensor sets three weights in one call: all of them or none.
  std::vector<float> qkv(12 * 4);
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = 0.03f * static_cast<float>(i) - 0.5f;
  const int64_t qkv_shape[2] = {12, 4};
  walk_host("rill_model_set_weight (fused)",
            [&] {
              return rill_model_set_weight(tiny.model, "model.layers.0.self_attn.qkv_proj.weight", RILL_DTYPE_F32, 2,
                                           qkv_shape, qkv.data(), qkv.size() * 4);
            },
            [&] { CHECK(tiny.run() == out_b); }, [] {});
  CHECK(tiny.run() != out_b);
}

TEST_CASE("host allocation failures: forward passes keep the cache as it was") {
  TinyModel tiny;
  REQUIRE(rill_model_load_safetensors(tiny.model, write_tiny_checkpoint("c.safetensors", 0.3f).c_str()) == RILL_OK);
  walk_forward("rill_model_forward", tiny);
}

TEST_CASE("device faults: a load whose allocation or write fails sets no weight") {
  const std::string a = write_tiny_checkpoint("d.safetensors", 0.4f);
  TinyModel tiny(fake_config("fakecaps"));
  const std::string none_set = tiny.missing();
  REQUIRE(!none_set.empty());
  for (const char* countdown : {"fake_fail_alloc_countdown", "fake_fail_write_countdown"}) {
    int* fault = plugin_countdown("fakecaps", countdown);
    // Each of the eight weights is one allocation and one write: fail each in turn.
    for (int n = 1; n <= 8; ++n) {
      CAPTURE(countdown);
      CAPTURE(n);
      *fault = n;
      const rill_status status = rill_model_load_safetensors(tiny.model, a.c_str());
      *fault = 0;
      const bool alloc = std::strcmp(countdown, "fake_fail_alloc_countdown") == 0;
      expect_failure(status, alloc ? RILL_ERROR_OUT_OF_MEMORY : RILL_ERROR_BACKEND,
                     {"rill_model_load_safetensors: weight '", "fakecaps backend",
                      alloc ? "fake: injected device out of memory" : "fake: injected device loss on write"});
      CHECK(tiny.missing() == none_set);
    }
  }
  REQUIRE_MESSAGE(rill_model_load_safetensors(tiny.model, a.c_str()) == RILL_OK, rill_last_error());
  CHECK(tiny.missing().empty());
}

TEST_CASE("device faults: an op failing in a forward pass is a status; the context stays usable") {
  TinyModel tiny(fake_config("fakecaps"));
  REQUIRE(rill_model_load_safetensors(tiny.model, write_tiny_checkpoint("e.safetensors", 0.5f).c_str()) == RILL_OK);
  rill_kv_cache* cache = nullptr;
  REQUIRE(rill_kv_cache_create(tiny.model, 1, 8, &cache) == RILL_OK);
  rill_tensor* h = tiny.context.tensor({1, 2, 4});
  int* fault = plugin_countdown("fakecaps", "fake_fail_op_countdown");
  // Every op of the pass in turn: the pass has fewer than 16 ops.
  for (int n = 1; n <= 16; ++n) {
    CAPTURE(n);
    *fault = n;
    const rill_status status = rill_model_forward(tiny.model, cache, h, nullptr, 0);
    const bool fired = *fault == 0;
    *fault = 0;
    if (!fired) {
      REQUIRE(status == RILL_OK);
      REQUIRE(rill_kv_cache_set_length(cache, 0, 0) == RILL_OK);
      continue;
    }
    expect_failure(status, RILL_ERROR_BACKEND, {"fakecaps backend", "fake: injected device loss in an op"});
    int32_t length = -1;
    CHECK(rill_kv_cache_get_length(cache, 0, &length) == RILL_OK);
    CHECK(length == 0);
  }
  // Usable after the faults: the same pass runs and the cache grows.
  REQUIRE_MESSAGE(rill_model_forward(tiny.model, cache, h, nullptr, 0) == RILL_OK, rill_last_error());
  int32_t length = -1;
  CHECK(rill_kv_cache_get_length(cache, 0, &length) == RILL_OK);
  CHECK(length == 2);
  rill_tensor_destroy(h);
  rill_kv_cache_destroy(cache);
}

TEST_CASE("device faults: a failed tensor write is a status; the tensor and context stay usable") {
  rill_test::ScopedContext context(fake_config("fakehost"));
  rill_tensor* t = context.tensor({2, 4});
  const std::vector<float> first = {1, 2, 3, 4, 5, 6, 7, 8};
  REQUIRE(rill_tensor_write_f32(t, first.data(), first.size()) == RILL_OK);
  int* fault = plugin_countdown("fakehost", "fake_fail_write_countdown");
  *fault = 1;
  const std::vector<float> second(8, -1.0f);
  expect_failure(rill_tensor_write_f32(t, second.data(), second.size()), RILL_ERROR_BACKEND,
                 {"fakehost backend", "fake: injected device loss on write"});
  *fault = 0;
  std::vector<float> got(8);
  REQUIRE(rill_tensor_read_f32(t, got.data(), got.size()) == RILL_OK);
  CHECK(got == first);  // the fake fails before writing anything
  REQUIRE(rill_tensor_write_f32(t, second.data(), second.size()) == RILL_OK);
  REQUIRE(rill_tensor_read_f32(t, got.data(), got.size()) == RILL_OK);
  CHECK(got == second);
  // A device allocation failing: the context makes the next tensor.
  int* alloc = plugin_countdown("fakehost", "fake_fail_alloc_countdown");
  *alloc = 1;
  rill_tensor* none = nullptr;
  const int64_t shape[1] = {4};
  expect_failure(rill_tensor_create(context.ctx, RILL_DTYPE_F32, 1, shape, &none), RILL_ERROR_OUT_OF_MEMORY,
                 {"fakehost backend", "fake: injected device out of memory"});
  *alloc = 0;
  CHECK(none == nullptr);
  rill_tensor_destroy(context.tensor({4}));
  rill_tensor_destroy(t);
}

// The ids of text, special tokens added.
std::vector<int32_t> encode(const rill_tokenizer* tokenizer, const char* text) {
  std::vector<int32_t> ids(64);
  size_t count = 0;
  REQUIRE_MESSAGE(rill_tokenizer_encode(tokenizer, text, std::strlen(text), 1, ids.data(), ids.size(), &count) == RILL_OK,
                  rill_last_error());
  ids.resize(count);
  return ids;
}

TEST_CASE("host allocation failures: language model and tokenizer loads") {
  rill_test::ScopedContext context;
  for (const std::string& path : {kFortune, kGgufLlama}) {
    rill_lm* lm = nullptr;
    walk_host(("rill_lm_load (" + path.substr(path.rfind('/') + 1) + ")").c_str(),
              [&] { return rill_lm_load(context.ctx, path.c_str(), nullptr, &lm); }, [&] { CHECK(lm == nullptr); },
              [&] { rill_lm_destroy(lm), lm = nullptr; });
    rill_lm_info info{};
    info.struct_size = sizeof info;
    REQUIRE(rill_lm_get_info(lm, &info) == RILL_OK);
    CHECK(info.num_layers >= 1);
    rill_lm_destroy(lm);
  }
  // tokenizer.json with tokenizer_config.json (a small one: the walk loads it
  // once per allocation it makes), and the two kinds of GGUF vocabulary. The
  // loaded tokenizer encodes as one loaded without failures does.
  const std::string folder = write_tiny_tokenizer();
  const char* text = "ab a\n\u00e9<tool></s>";
  for (const std::string& path : {folder, kGgufLlama, kGgufSentencePiece}) {
    rill_tokenizer* expected = nullptr;
    REQUIRE_MESSAGE(rill_tokenizer_load(path.c_str(), &expected) == RILL_OK, rill_last_error());
    rill_tokenizer* tokenizer = nullptr;
    walk_host(("rill_tokenizer_load (" + path.substr(path.rfind('/') + 1) + ")").c_str(),
              [&] { return rill_tokenizer_load(path.c_str(), &tokenizer); }, [&] { CHECK(tokenizer == nullptr); },
              [&] { rill_tokenizer_destroy(tokenizer), tokenizer = nullptr; });
    CHECK(encode(tokenizer, text) == encode(expected, text));
    rill_tokenizer_destroy(tokenizer);
    rill_tokenizer_destroy(expected);
  }
}

TEST_CASE("host allocation failures: sessions") {
  rill_test::ScopedContext context;
  rill_lm* lm = nullptr;
  REQUIRE_MESSAGE(rill_lm_load(context.ctx, kFortune.c_str(), nullptr, &lm) == RILL_OK, rill_last_error());
  rill_session_options options;
  rill_session_options_init(&options, lm);
  options.capacity = 64;
  rill_session* session = nullptr;
  walk_host("rill_session_create", [&] { return rill_session_create(lm, &options, &session); },
            [&] { CHECK(session == nullptr); }, [&] { rill_session_destroy(session), session = nullptr; });
  // Appending text appends all of its tokens or none.
  rill_tokenizer* tokenizer = nullptr;
  REQUIRE_MESSAGE(rill_tokenizer_load(kFortune.c_str(), &tokenizer) == RILL_OK, rill_last_error());
  REQUIRE(rill_session_set_tokenizer(session, tokenizer) == RILL_OK);
  const char* prompt = "The fortune says";
  size_t count = 0;
  walk_host("rill_session_append_text",
            [&] { return rill_session_append_text(session, prompt, std::strlen(prompt), 1); },
            [&] {
              CHECK(rill_session_get_ids(session, nullptr, 0, &count) == RILL_OK);
              CHECK(count == 0);
            },
            [&] { REQUIRE(rill_session_rewind(session, 0) == RILL_OK); });
  // The session works after the failures: one step.
  int32_t generated = 0;
  REQUIRE_MESSAGE(rill_session_step(session, 1, nullptr, nullptr, &generated, nullptr) == RILL_OK, rill_last_error());
  CHECK(generated == 1);
  rill_session_destroy(session);
  rill_tokenizer_destroy(tokenizer);
  rill_lm_destroy(lm);
}

// The conversation's ids.
std::vector<int32_t> session_ids(const rill_session* session) {
  size_t count = 0;
  rill_session_get_ids(session, nullptr, 0, &count);  // the count, also when it refuses the capacity 0
  std::vector<int32_t> ids(count);
  REQUIRE(rill_session_get_ids(session, ids.data(), ids.size(), &count) == RILL_OK);
  return ids;
}

// A rill_token_fn that appends the token's text to the std::string user_data,
// reserved to kStreamedBytes so that it allocates nothing while a walk is armed.
constexpr size_t kStreamedBytes = 4096;
int append_text(void* user_data, int32_t, const char* text, size_t text_len) {
  // Past the reservation: ask the step to stop, which the comparison with
  // the reference then shows (nothing may throw through rill).
  if (static_cast<std::string*>(user_data)->size() + text_len > kStreamedBytes) return 1;
  static_cast<std::string*>(user_data)->append(text, text_len);
  return 0;
}

// Every session call with allocation N failing, N = 1, 2, ...: a failed call
// leaves the conversation's ids as they were, and the session then generates
// exactly what a session that never failed generates (so its cache, sampler
// state and text are as they were too), streaming the same text. The sampler draws at temperature 1,
// so a random draw taken by a failed call would change the later tokens.
TEST_CASE("host allocation failures: session calls leave the session as it was") {
  rill_test::ScopedContext context;
  rill_lm* lm = nullptr;
  REQUIRE_MESSAGE(rill_lm_load(context.ctx, kFortune.c_str(), nullptr, &lm) == RILL_OK, rill_last_error());
  rill_tokenizer* tokenizer = nullptr;
  REQUIRE_MESSAGE(rill_tokenizer_load(kFortune.c_str(), &tokenizer) == RILL_OK, rill_last_error());
  rill_session_options options;
  rill_session_options_init(&options, lm);
  options.capacity = 64;
  options.sampler.temperature = 1.0f;
  options.sampler.top_k = 0;
  options.sampler.seed = 7;
  // Every second token ends a generation, so steps also flush the streamed text.
  options.max_new_tokens = 2;
  const char* prompt = "The fortune says";
  const char* stop = "zzz";
  const int32_t eos[2] = {1, 2};
  const std::vector<int32_t> prompt_ids = encode(tokenizer, prompt);
  rill_sampler_params sampler;
  rill_sampler_params_init(&sampler);
  sampler.seed = 11;
  // The text each session streamed: a failed step must take its token back
  // from the streamed text too, or the retried step would repeat it.
  std::map<const rill_session*, std::string> streamed;
  const auto step = [&](rill_session* s) {
    return rill_session_step(s, 1, append_text, &streamed.at(s), nullptr, nullptr);
  };
  // The calls, in order, on the walked session and on the reference.
  struct Call {
    const char* name;
    std::function<rill_status(rill_session*)> run;
  };
  const std::vector<Call> calls = {
      {"rill_session_set_tokenizer", [&](rill_session* s) { return rill_session_set_tokenizer(s, tokenizer); }},
      {"rill_session_add_stop_string", [&](rill_session* s) { return rill_session_add_stop_string(s, stop, 3); }},
      {"rill_session_set_eos_ids", [&](rill_session* s) { return rill_session_set_eos_ids(s, eos, 2); }},
      {"rill_session_append_text",
       [&](rill_session* s) { return rill_session_append_text(s, prompt, std::strlen(prompt), 1); }},
      {"rill_session_step (prefill)", step},
      {"rill_session_step (decode)", step},
      {"rill_session_step (decode, again)", step},
      {"rill_session_rewind", [](rill_session* s) { return rill_session_rewind(s, 3); }},
      {"rill_session_set_ids",
       [&](rill_session* s) { return rill_session_set_ids(s, prompt_ids.data(), prompt_ids.size()); }},
      {"rill_session_step (after set_ids)", step},
      {"rill_session_set_sampler", [&](rill_session* s) { return rill_session_set_sampler(s, &sampler); }},
      {"rill_session_set_text",
       [&](rill_session* s) { return rill_session_set_text(s, prompt, std::strlen(prompt), 1); }},
      {"rill_session_step (after set_text)", step},
      {"rill_session_clear_stop_strings", [](rill_session* s) { return rill_session_clear_stop_strings(s); }},
  };
  rill_session* reference = nullptr;
  REQUIRE(rill_session_create(lm, &options, &reference) == RILL_OK);
  rill_session* session = nullptr;
  REQUIRE(rill_session_create(lm, &options, &session) == RILL_OK);
  for (const rill_session* s : {reference, session}) streamed[s].reserve(kStreamedBytes);
  for (const Call& call : calls) {
    REQUIRE_MESSAGE(call.run(reference) == RILL_OK, call.name, ": ", rill_last_error());
    std::vector<int32_t> before;
    walk_host(call.name, [&] { return call.run(session); }, [&] { CHECK(session_ids(session) == before); },
              [&] { FAIL_CHECK(call.name, " succeeded while an allocation failed: the walk cannot undo it"); },
              [&] { before = session_ids(session); });
    CHECK(session_ids(session) == session_ids(reference));
    CHECK(streamed[session] == streamed[reference]);
  }
  for (rill_session* s : {reference, session}) {
    REQUIRE_MESSAGE(rill_session_step(s, 4, append_text, &streamed.at(s), nullptr, nullptr) == RILL_OK, rill_last_error());
  }
  CHECK(session_ids(session) == session_ids(reference));
  CHECK(!streamed[reference].empty());
  CHECK(streamed[session] == streamed[reference]);
  rill_session_destroy(session);
  rill_session_destroy(reference);
  rill_tokenizer_destroy(tokenizer);
  rill_lm_destroy(lm);
}

// A step that fails takes its token back, from the streamed text too: with
// every step ending a generation, the text is flushed after the token's
// text was taken, and a byte-fallback token's text is held back until then,
// so a token kept by a failed step would come out twice on the retry. The
// GGUF llama (16 ids) speaks through the SentencePiece vocabulary (13 ids,
// three of them bytes).
TEST_CASE("host allocation failures: a failed step leaves the streamed text as it was") {
  rill_test::ScopedContext context;
  rill_lm* lm = nullptr;
  REQUIRE_MESSAGE(rill_lm_load(context.ctx, kGgufLlama.c_str(), nullptr, &lm) == RILL_OK, rill_last_error());
  rill_tokenizer* tokenizer = nullptr;
  REQUIRE_MESSAGE(rill_tokenizer_load(kGgufSentencePiece.c_str(), &tokenizer) == RILL_OK, rill_last_error());
  rill_session_options options;
  rill_session_options_init(&options, lm);
  options.capacity = 32;
  options.max_new_tokens = 1;
  options.sampler.seed = 3;
  std::map<const rill_session*, std::string> streamed;
  rill_session* reference = nullptr;
  rill_session* session = nullptr;
  const int32_t prompt[2] = {1, 7};
  for (rill_session** s : {&reference, &session}) {
    REQUIRE(rill_session_create(lm, &options, s) == RILL_OK);
    REQUIRE(rill_session_set_tokenizer(*s, tokenizer) == RILL_OK);
    REQUIRE(rill_session_append_ids(*s, prompt, 2) == RILL_OK);
    streamed[*s].reserve(kStreamedBytes);
  }
  const auto step = [&](rill_session* s) {
    return rill_session_step(s, 1, append_text, &streamed.at(s), nullptr, nullptr);
  };
  for (int i = 0; i < 12; ++i) {
    REQUIRE_MESSAGE(step(reference) == RILL_OK, rill_last_error());
    std::vector<int32_t> before;
    walk_host("rill_session_step (ending the generation)", [&] { return step(session); },
              [&] { CHECK(session_ids(session) == before); },
              [&] { FAIL_CHECK("the step succeeded while an allocation failed: the walk cannot undo it"); },
              [&] { before = session_ids(session); });
    CHECK(session_ids(session) == session_ids(reference));
    CHECK(streamed[session] == streamed[reference]);
  }
  // The draws included held-back byte tokens ("\xC3" then "\xA9" is "\u00e9";
  // either alone is U+FFFD), else the test would not reach the case.
  CHECK(streamed[reference].find("\xEF\xBF\xBD") != std::string::npos);
  rill_session_destroy(session);
  rill_session_destroy(reference);
  rill_tokenizer_destroy(tokenizer);
  rill_lm_destroy(lm);
}

// The other entry points that allocate: each failed call leaves its outputs
// and the objects it was given as they were, so that the same call then gives
// what a call that never failed gives.
TEST_CASE("host allocation failures: tokenizer, detokenizer, sampler, logits and reports") {
  const auto nothing = [] {};
  rill_tokenizer* tokenizer = nullptr;
  REQUIRE_MESSAGE(rill_tokenizer_load(kGgufSentencePiece.c_str(), &tokenizer) == RILL_OK, rill_last_error());
  const char* text = "ab a\n\u00e9<tool>";
  const std::vector<int32_t> ids = encode(tokenizer, text);
  std::vector<int32_t> out(64, -1);
  size_t count = 0;
  walk_host("rill_tokenizer_encode",
            [&] { return rill_tokenizer_encode(tokenizer, text, std::strlen(text), 1, out.data(), out.size(), &count); },
            nothing, nothing);
  CHECK(std::vector<int32_t>(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(count)) == ids);
  char buf[64] = {};
  walk_host("rill_tokenizer_decode",
            [&] { return rill_tokenizer_decode(tokenizer, ids.data(), ids.size(), 1, buf, sizeof buf, &count); },
            nothing, nothing);
  CHECK(std::string(buf) == "ab a\n\u00e9<tool>");
  int32_t id = -1;
  walk_host("rill_tokenizer_token_to_id", [&] { return rill_tokenizer_token_to_id(tokenizer, "<tool>", &id); },
            [&] { CHECK(id == -1); }, nothing);
  CHECK(id == 12);

  // A detokenizer that failed a push or a flush gives the text of one that never failed.
  rill_detokenizer* detokenizer = nullptr;
  walk_host("rill_detokenizer_create", [&] { return rill_detokenizer_create(tokenizer, 1, &detokenizer); },
            [&] { CHECK(detokenizer == nullptr); }, [&] { rill_detokenizer_destroy(detokenizer), detokenizer = nullptr; });
  std::string streamed;
  for (const int32_t next : ids) {
    walk_host("rill_detokenizer_push",
              [&] { return rill_detokenizer_push(detokenizer, next, buf, sizeof buf, &count); }, nothing,
              [&] { FAIL_CHECK("a push succeeded while an allocation failed: the walk cannot undo it"); });
    streamed.append(buf, count);
  }
  walk_host("rill_detokenizer_flush", [&] { return rill_detokenizer_flush(detokenizer, buf, sizeof buf, &count); },
            nothing, [&] { FAIL_CHECK("a flush succeeded while an allocation failed: the walk cannot undo it"); });
  streamed.append(buf, count);
  CHECK(streamed == "ab a\n\u00e9<tool>");
  rill_detokenizer_destroy(detokenizer);
  rill_tokenizer_destroy(tokenizer);

  // A sampler that failed a draw draws what one that never failed draws.
  rill_sampler_params params;
  rill_sampler_params_init(&params);
  params.top_p = 0.9f;
  params.repetition_penalty = 1.3f;
  const std::vector<float> logits = {0.5f, 1.5f, -1.0f, 2.0f, 0.25f, 1.0f};
  const int32_t history[2] = {3, 1};
  std::vector<float> probabilities(logits.size(), -1.0f);
  walk_host("rill_sampler_probabilities",
            [&] {
              return rill_sampler_probabilities(&params, logits.data(), logits.size(), history, 2,
                                                probabilities.data(), probabilities.size());
            },
            nothing, nothing);
  CHECK(probabilities[0] > 0.0f);
  rill_sampler* sampler = nullptr;
  rill_sampler* reference = nullptr;
  REQUIRE(rill_sampler_create(&params, &reference) == RILL_OK);
  walk_host("rill_sampler_create", [&] { return rill_sampler_create(&params, &sampler); },
            [&] { CHECK(sampler == nullptr); }, [&] { rill_sampler_destroy(sampler), sampler = nullptr; });
  for (int draw = 0; draw < 3; ++draw) {
    int32_t expected = -1, token = -1;
    REQUIRE(rill_sampler_sample(reference, logits.data(), logits.size(), history, 2, &expected) == RILL_OK);
    walk_host("rill_sampler_sample",
              [&] { return rill_sampler_sample(sampler, logits.data(), logits.size(), history, 2, &token); },
              [&] { CHECK(token == -1); },
              [&] { FAIL_CHECK("a draw succeeded while an allocation failed: the walk cannot undo it"); });
    CHECK(token == expected);
  }
  rill_sampler_destroy(sampler);
  rill_sampler_destroy(reference);

  // Logits into a cache: a failed call leaves the cache's length as it was.
  rill_test::ScopedContext context;
  rill_lm* lm = nullptr;
  REQUIRE_MESSAGE(rill_lm_load(context.ctx, kGgufLlama.c_str(), nullptr, &lm) == RILL_OK, rill_last_error());
  rill_kv_cache* cache = nullptr;
  REQUIRE(rill_kv_cache_create(rill_lm_model(lm), 1, 16, &cache) == RILL_OK);
  const int32_t prompt[3] = {1, 7, 9};
  std::vector<float> lm_logits(16);
  int32_t length = -1;
  walk_host("rill_lm_logits",
            [&] { return rill_lm_logits(lm, cache, 1, 3, prompt, 1, lm_logits.data(), lm_logits.size()); },
            [&] {
              CHECK(rill_kv_cache_get_length(cache, 0, &length) == RILL_OK);
              CHECK(length == 0);
            },
            [&] { REQUIRE(rill_kv_cache_set_length(cache, 0, 0) == RILL_OK); });
  rill_kv_cache_destroy(cache);
  rill_lm_destroy(lm);

  rill_model_desc desc;
  const char* toml = "[model]\nnum_layers = 2\nhidden_size = 8\nnum_heads = 2\nnum_kv_heads = 1\n"
                     "intermediate_size = 16\nactivation = \"silu_glu\"\n";
  walk_host("rill_model_desc_from_toml", [&] { return rill_model_desc_from_toml(toml, "m.toml", &desc); }, nothing,
            nothing);
  CHECK(desc.num_layers == 2);
  // The report lists the Vulkan plugin's devices, listed for the first time
  // in this process during the walk. A failure that the call absorbed must
  // leave the report as one made with no failure.
  char report[4096];
  std::vector<std::string> absorbed;
  walk_host("rill_info_report",
            [&] { return rill_info_report(rill_test::kCpuConfig, report, sizeof report, &count); }, nothing,
            [&] { absorbed.emplace_back(report); });
  const std::string walked = report;
  REQUIRE(rill_info_report(rill_test::kCpuConfig, report, sizeof report, &count) == RILL_OK);
  CHECK(walked == report);
  for (const std::string& absorbed_report : absorbed) CHECK(absorbed_report == walked);
}

// The ops on the CPU backend, each walked with its inputs written afresh
// before every call (rope and residual_add work in place): a failed call
// returns the status, and the call that then succeeds computes what a call
// with no failure computed.
TEST_CASE("host allocation failures: ops") {
  rill_test::ScopedContext context;
  rill_tensor* x = context.tensor({1, 2, 1, 4});
  rill_tensor* w = context.tensor({4, 4});
  rill_tensor* gain = context.tensor({4});
  rill_tensor* out = context.tensor({1, 2, 1, 4});
  const std::vector<float> x_values = {0.5f, -1.0f, 0.25f, 2.0f, 1.5f, 0.75f, -0.5f, 1.0f};
  std::vector<float> w_values(16);
  for (size_t i = 0; i < w_values.size(); ++i) w_values[i] = 0.1f * static_cast<float>(i) - 0.7f;
  const std::vector<float> gain_values = {1.0f, 0.5f, -0.25f, 2.0f};
  const int32_t ids[2] = {3, 1};
  const int32_t positions[2] = {4, 5};
  const float inv_freq[2] = {1.0f, 0.01f};
  rill_attention_params window{};
  window.struct_size = sizeof(window);
  window.scale = 0.5f;
  window.window = 1;
  window.softcap = 30.0f;
  const auto reset = [&] {
    REQUIRE(rill_tensor_write_f32(x, x_values.data(), x_values.size()) == RILL_OK);
    REQUIRE(rill_tensor_write_f32(w, w_values.data(), w_values.size()) == RILL_OK);
    REQUIRE(rill_tensor_write_f32(gain, gain_values.data(), gain_values.size()) == RILL_OK);
    const std::vector<float> zeros(8, 0.0f);
    REQUIRE(rill_tensor_write_f32(out, zeros.data(), zeros.size()) == RILL_OK);
  };
  // Each op, and the tensor it writes.
  struct Op {
    const char* name;
    std::function<rill_status()> run;
    rill_tensor* result;
  };
  const std::vector<Op> ops = {
      {"rill_gemm", [&] { return rill_gemm(context.ctx, x, w, nullptr, 1.0f, 0.0f, out); }, out},
      {"rill_rms_norm", [&] { return rill_rms_norm(context.ctx, x, gain, 1e-6f, out); }, out},
      {"rill_layer_norm", [&] { return rill_layer_norm(context.ctx, x, gain, gain, 1e-6f, out); }, out},
      {"rill_residual_add", [&] { return rill_residual_add(context.ctx, x, out, gain, 1.0f, 0.5f); }, x},
      {"rill_get_rows", [&] { return rill_get_rows(context.ctx, w, ids, 2, out); }, out},
      {"rill_rope", [&] { return rill_rope(context.ctx, x, positions, 2, 10000.0f, 4); }, x},
      {"rill_activation", [&] { return rill_activation(context.ctx, RILL_ACT_SILU, x, nullptr, out); }, out},
      {"rill_attention", [&] { return rill_attention(context.ctx, x, x, x, nullptr, 0, 0.5f, out); }, out},
      {"rill_attention_ex", [&] { return rill_attention_ex(context.ctx, x, x, x, nullptr, 0, &window, out); }, out},
      {"rill_rope_freqs",
       [&] { return rill_rope_freqs(context.ctx, x, positions, 2, inv_freq, 2, 1.25f, 4); }, x},
      {"rill_fused_add_rms_norm",
       [&] { return rill_fused_add_rms_norm(context.ctx, x, out, gain, gain, 1e-6f, 1.0f, 0.5f); }, x},
      {"rill_fused_add_layer_norm",
       [&] { return rill_fused_add_layer_norm(context.ctx, x, out, gain, gain, gain, 1e-6f, 1.0f, 0.5f); }, x},
  };
  std::vector<float> expected(8), got(8);
  for (const Op& op : ops) {
    reset();
    REQUIRE_MESSAGE(op.run() == RILL_OK, op.name, ": ", rill_last_error());
    REQUIRE(rill_tensor_read_f32(op.result, expected.data(), expected.size()) == RILL_OK);
    walk_host(op.name, op.run, [] {}, [] {}, reset);
    REQUIRE(rill_tensor_read_f32(op.result, got.data(), got.size()) == RILL_OK);
    CHECK_MESSAGE(got == expected, op.name);
  }
  for (rill_tensor* t : {x, w, gain, out}) rill_tensor_destroy(t);
}

TEST_CASE("host allocation failures on error paths: a status, never an exception") {
  // Building the message can itself run out of memory: then the status is
  // RILL_ERROR_OUT_OF_MEMORY, and the message a fixed text.
  int32_t size = 0;
  const std::vector<std::function<rill_status()>> calls = {
      [&] { return rill_tokenizer_vocab_size(nullptr, &size); },
      [&] { return rill_context_create(nullptr, nullptr); },
      [&] { return rill_model_load_safetensors(nullptr, "x"); },
      [&] { return rill_lm_load(nullptr, "x", nullptr, nullptr); },
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    CAPTURE(i);
    rill_fault::fail_allocation(1);
    const rill_status status = calls[i]();
    rill_fault::fail_allocation(0);
    CHECK((status == RILL_ERROR_INVALID_ARGUMENT || status == RILL_ERROR_OUT_OF_MEMORY));
    CHECK(std::strlen(rill_last_error()) > 0);
  }
}
