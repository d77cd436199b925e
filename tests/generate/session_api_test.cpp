// The session and sampler C API (rill_session_*, rill_sampler_*) on the demo
// model: every entry point's argument checks, NULL handling, the text layer's
// stop strings, and cancel from another thread. Built into the sanitizer runs;
// the numbers themselves are checked against transformers in
// tests/generate/*_reference.py.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "rill.h"
#include "test_helpers.h"

using rill_test::expect_failure;

namespace {

struct Fixture {
  rill_context* ctx = nullptr;
  rill_lm* lm = nullptr;
  rill_tokenizer* tokenizer = nullptr;
  Fixture() {
    REQUIRE(rill_context_create(rill_test::kCpuConfig, &ctx) == RILL_OK);
    REQUIRE_MESSAGE(rill_lm_load(ctx, RILL_DEMO_MODEL, nullptr, &lm) == RILL_OK, rill_last_error());
    REQUIRE_MESSAGE(rill_tokenizer_load(RILL_DEMO_MODEL, &tokenizer) == RILL_OK, rill_last_error());
  }
  ~Fixture() {
    rill_tokenizer_destroy(tokenizer);
    rill_lm_destroy(lm);
    rill_context_destroy(ctx);
  }
};

struct Collected {
  std::string text;
  std::vector<int32_t> ids;
  rill_session* cancel_from_thread = nullptr;  // cancels from another thread at the third token
};

int collect(void* user_data, int32_t token, const char* text, size_t text_len) {
  auto& c = *static_cast<Collected*>(user_data);
  c.ids.push_back(token);
  if (text != nullptr) c.text.append(text, text_len);
  if (c.cancel_from_thread != nullptr && c.ids.size() == 3) std::thread(rill_session_cancel, c.cancel_from_thread).join();
  return 0;
}

rill_session* greedy_session(rill_lm* lm, int32_t max_new_tokens) {
  rill_session_options o;
  rill_session_options_init(&o, lm);
  o.sampler.temperature = 0.0f;
  o.max_new_tokens = max_new_tokens;
  rill_session* s = nullptr;
  REQUIRE_MESSAGE(rill_session_create(lm, &o, &s) == RILL_OK, rill_last_error());
  return s;
}

}  // namespace

TEST_CASE("sampler: argument checks name the argument") {
  rill_sampler_params p;
  rill_sampler_params_init(&p);
  const float logits[4] = {0.0f, 1.0f, 2.0f, 3.0f};
  float probs[4];
  expect_failure(rill_sampler_probabilities(nullptr, logits, 4, nullptr, 0, probs, 4), RILL_ERROR_INVALID_ARGUMENT,
                 {"params"});
  expect_failure(rill_sampler_probabilities(&p, logits, 4, nullptr, 2, probs, 4), RILL_ERROR_INVALID_ARGUMENT,
                 {"history", "history_count 2"});
  expect_failure(rill_sampler_probabilities(&p, logits, 4, nullptr, 0, probs, 3), RILL_ERROR_INVALID_ARGUMENT,
                 {"probability_count", "4", "3"});
  p.top_k = -1;
  expect_failure(rill_sampler_create(&p, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"top_k", "-1"});
  rill_sampler_params_init(&p);
  rill_sampler* sampler = nullptr;
  REQUIRE(rill_sampler_create(&p, &sampler) == RILL_OK);
  int32_t token = -1;
  expect_failure(rill_sampler_sample(sampler, logits, 4, nullptr, 0, nullptr), RILL_ERROR_INVALID_ARGUMENT,
                 {"out_token"});
  CHECK(rill_sampler_sample(sampler, logits, 4, nullptr, 0, &token) == RILL_OK);
  CHECK((token >= 0 && token < 4));
  rill_sampler_destroy(sampler);
  rill_sampler_destroy(nullptr);
}

TEST_CASE("session: argument checks name the argument") {
  Fixture f;
  rill_session_options o;
  rill_session_options_init(&o, f.lm);
  CHECK(o.capacity == 256);  // the demo model's max_position_embeddings
  CHECK(o.sampler.temperature == doctest::Approx(0.8));
  expect_failure(rill_session_create(nullptr, &o, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"lm"});
  rill_session* s = nullptr;
  o.capacity = 0;
  expect_failure(rill_session_create(f.lm, &o, &s), RILL_ERROR_INVALID_ARGUMENT, {"capacity", "got 0"});
  o.capacity = 8;
  o.prefill_chunk = 0;
  expect_failure(rill_session_create(f.lm, &o, &s), RILL_ERROR_INVALID_ARGUMENT, {"prefill_chunk"});
  o.prefill_chunk = 4;
  o.sampler.min_p = 2.0f;
  expect_failure(rill_session_create(f.lm, &o, &s), RILL_ERROR_INVALID_ARGUMENT, {"sampler.min_p", "2"});
  o.sampler.min_p = 0.0f;
  REQUIRE(rill_session_create(f.lm, &o, &s) == RILL_OK);

  expect_failure(rill_session_step(nullptr, 1, nullptr, nullptr, nullptr, nullptr), RILL_ERROR_INVALID_ARGUMENT,
                 {"session"});
  expect_failure(rill_session_step(s, 0, nullptr, nullptr, nullptr, nullptr), RILL_ERROR_INVALID_ARGUMENT,
                 {"max_forwards"});
  expect_failure(rill_session_step(s, 1, nullptr, nullptr, nullptr, nullptr), RILL_ERROR_INVALID_ARGUMENT,
                 {"empty conversation"});
  const std::vector<int32_t> nine(9, 5);
  expect_failure(rill_session_append_ids(s, nine.data(), nine.size()), RILL_ERROR_INVALID_ARGUMENT,
                 {"9 tokens", "capacity of 8"});
  expect_failure(rill_session_append_ids(s, nullptr, 2), RILL_ERROR_INVALID_ARGUMENT, {"ids"});
  expect_failure(rill_session_append_text(s, "hi", 2, 1), RILL_ERROR_INVALID_ARGUMENT, {"tokenizer"});
  expect_failure(rill_session_add_stop_string(s, "", 0), RILL_ERROR_INVALID_ARGUMENT, {"text_bytes"});
  expect_failure(rill_session_rewind(s, 1), RILL_ERROR_INVALID_ARGUMENT, {"length", "0 to 0", "got 1"});
  const int32_t far = 5000;
  expect_failure(rill_session_set_eos_ids(s, &far, 1), RILL_ERROR_INVALID_ARGUMENT, {"ids", "5000"});
  REQUIRE(rill_session_append_ids(s, nine.data(), 3) == RILL_OK);
  size_t count = 0;
  expect_failure(rill_session_get_ids(s, nullptr, 0, &count), RILL_ERROR_INVALID_ARGUMENT, {"capacity", "3"});
  CHECK(count == 3);
  rill_session_destroy(s);
  rill_session_destroy(nullptr);
  rill_session_cancel(nullptr);
}

TEST_CASE("session: stop strings, rewind, set_text and cancel from another thread") {
  Fixture f;
  rill_session* s = greedy_session(f.lm, 40);
  REQUIRE(rill_session_set_tokenizer(s, f.tokenizer) == RILL_OK);
  REQUIRE(rill_session_set_eos_ids(s, nullptr, 0) == RILL_OK);
  const std::string prompt = "You will";
  REQUIRE(rill_session_append_text(s, prompt.data(), prompt.size(), 1) == RILL_OK);
  Collected all;
  rill_stop_reason reason = RILL_STOP_NONE;
  while (reason == RILL_STOP_NONE) REQUIRE(rill_session_step(s, 4, collect, &all, nullptr, &reason) == RILL_OK);
  CHECK(reason == RILL_STOP_MAX_NEW_TOKENS);
  REQUIRE(all.text.size() > 6);

  // The same greedy text again, with a stop string from its middle: only the text before it comes out.
  size_t prompt_length = 0;
  rill_session_get_ids(s, nullptr, 0, &prompt_length);
  prompt_length -= all.ids.size();
  REQUIRE(rill_session_rewind(s, static_cast<int32_t>(prompt_length)) == RILL_OK);
  const std::string stop = all.text.substr(all.text.size() / 2, 3);
  REQUIRE(rill_session_add_stop_string(s, stop.data(), stop.size()) == RILL_OK);
  Collected stopped;
  reason = RILL_STOP_NONE;
  while (reason == RILL_STOP_NONE) REQUIRE(rill_session_step(s, 4, collect, &stopped, nullptr, &reason) == RILL_OK);
  CHECK(reason == RILL_STOP_STRING);
  CHECK(stopped.text == all.text.substr(0, all.text.find(stop)));
  REQUIRE(rill_session_clear_stop_strings(s) == RILL_OK);

  // The whole conversation as text again: the cached prefix is kept, the continuation is the same.
  REQUIRE(rill_session_set_text(s, prompt.data(), prompt.size(), 1) == RILL_OK);
  Collected again;
  again.cancel_from_thread = s;
  int32_t generated = 0;
  REQUIRE(rill_session_step(s, 100, collect, &again, &generated, &reason) == RILL_OK);
  CHECK(reason == RILL_STOP_CANCELLED);
  CHECK(generated == 3);
  CHECK(std::vector<int32_t>(all.ids.begin(), all.ids.begin() + 3) == again.ids);
  rill_session_destroy(s);
}
