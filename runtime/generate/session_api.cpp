// The C API of generation sessions (rill.h, "Generation sessions").
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "errors.h"
#include "sampler.h"
#include "session.h"

namespace {

constexpr int32_t kDefaultCapacity = 2048;
constexpr int32_t kDefaultPrefillChunk = 256;

rill_status check_session(const std::string& f, const rill_session* session) {
  if (session == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": session: expected a session, got NULL");
  return RILL_OK;
}

rill_status check_eos(const std::string& f, int32_t vocab_size, const int32_t* ids, size_t count) {
  if (ids == nullptr && count != 0)
    return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": ids: expected a pointer for count " + std::to_string(count) + ", got NULL");
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": ids: expected token ids in [0, " +
                                                         std::to_string(vocab_size - 1) + "], got " +
                                                         std::to_string(ids[i]) + " at " + std::to_string(i));
    }
  }
  return RILL_OK;
}

// The host's callback, without a tokenizer: the token only.
class CallbackSink : public rill::generate::TokenSink {
 public:
  CallbackSink(rill_token_fn fn, void* user_data) : fn_(fn), user_data_(user_data) {}
  rill_status token(int32_t token, bool /*last*/, rill_stop_reason& asked) override {
    if (fn_ != nullptr && fn_(user_data_, token, nullptr, 0) != 0) asked = RILL_STOP_CALLBACK;
    return RILL_OK;
  }

 private:
  rill_token_fn fn_;
  void* user_data_;
};

// The host's callback with the text each token completes, stop strings held
// back until they cannot match, and RILL_STOP_STRING when one does.
class TextSink : public rill::generate::TokenSink {
 public:
  TextSink(rill::generate::SessionText& text, rill_token_fn fn, void* user_data)
      : text_(text), fn_(fn), user_data_(user_data) {}
  rill_status token(int32_t token, bool last, rill_stop_reason& asked) override {
    std::string out;
    bool matched = false;
    text_.push(token, last, out, matched);
    if (fn_ != nullptr && fn_(user_data_, token, out.c_str(), out.size()) != 0) asked = RILL_STOP_CALLBACK;
    if (matched) asked = RILL_STOP_STRING;
    return RILL_OK;
  }

 private:
  rill::generate::SessionText& text_;
  rill_token_fn fn_;
  void* user_data_;
};

}  // namespace

extern "C" {

RILL_API void rill_session_options_init(rill_session_options* options, const rill_lm* lm) {
  if (options == nullptr) return;
  *options = rill_session_options{};
  options->struct_size = sizeof(rill_session_options);
  options->capacity = kDefaultCapacity;
  options->max_new_tokens = 0;
  options->prefill_chunk = kDefaultPrefillChunk;
  rill_sampler_params_init(&options->sampler);
  rill_lm_info info{};
  info.struct_size = sizeof(info);
  if (lm == nullptr || rill_lm_get_info(lm, &info) != RILL_OK) return;
  if (info.max_position_embeddings > 0) options->capacity = info.max_position_embeddings;
  rill_sampler_params& s = options->sampler;
  s.temperature = info.do_sample != 0 ? info.temperature : 0.0f;
  s.top_k = info.top_k;
  s.top_p = info.top_p;
  s.min_p = info.min_p;
  s.repetition_penalty = info.repetition_penalty;
}

RILL_API rill_status rill_session_create(rill_lm* lm, const rill_session_options* options, rill_session** out_session) {
  constexpr const char* fn = "rill_session_create";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    if (lm == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": lm: expected a language model, got NULL");
    if (out_session == nullptr)
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out_session: expected a pointer, got NULL");
    rill_session_options o;
    rill_session_options_init(&o, lm);
    if (options != nullptr) {  // the fields inside the caller's struct_size over the defaults
      if (options->struct_size < sizeof(uint32_t)) {
        return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": options->struct_size: expected sizeof(rill_session_options) " +
                                                           std::to_string(sizeof(rill_session_options)) + ", got " +
                                                           std::to_string(options->struct_size));
      }
      std::memcpy(static_cast<void*>(&o), options, std::min<size_t>(options->struct_size, sizeof(o)));
    }
    if (o.capacity < 1)
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": options->capacity: expected >= 1, got " + std::to_string(o.capacity));
    if (o.prefill_chunk < 1) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                        f + ": options->prefill_chunk: expected >= 1, got " + std::to_string(o.prefill_chunk));
    }
    if (o.max_new_tokens < 0) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                        f + ": options->max_new_tokens: expected >= 0 (0 = no budget), got " + std::to_string(o.max_new_tokens));
    }
    rill_sampler_params sampler;
    RILL_CHECK(rill::generate::check_params(f, "options->sampler", &o.sampler, sampler));
    rill_lm_info info{};
    info.struct_size = sizeof(info);
    RILL_CHECK(rill_lm_get_info(lm, &info));

    auto session = std::make_unique<rill_session>();
    session->lm = lm;
    session->vocab_size = info.vocab_size;
    session->capacity = o.capacity;
    session->prefill_chunk = o.prefill_chunk;
    session->max_new_tokens = o.max_new_tokens;
    session->sampler = sampler;
    session->random = rill::generate::Random(sampler.seed);
    session->eos_ids.assign(info.eos_token_ids, info.eos_token_ids + std::clamp(info.eos_token_count, 0, 8));
    session->logits.resize(static_cast<size_t>(info.vocab_size));
    RILL_CHECK(rill_kv_cache_create(rill_lm_model(lm), 1, o.capacity, &session->cache));
    *out_session = session.release();
    return RILL_OK;
  });
}

RILL_API void rill_session_destroy(rill_session* session) {
  if (session == nullptr) return;
  rill_kv_cache_destroy(session->cache);
  delete session;
}

RILL_API rill_status rill_session_set_sampler(rill_session* session, const rill_sampler_params* params) {
  constexpr const char* fn = "rill_session_set_sampler";
  return rill::guarded(fn, [&]() -> rill_status {
    RILL_CHECK(check_session(fn, session));
    rill_sampler_params p;
    RILL_CHECK(rill::generate::check_params(fn, "params", params, p));
    session->sampler = p;
    session->random = rill::generate::Random(p.seed);
    return RILL_OK;
  });
}

RILL_API rill_status rill_session_set_eos_ids(rill_session* session, const int32_t* ids, size_t count) {
  constexpr const char* fn = "rill_session_set_eos_ids";
  return rill::guarded(fn, [&]() -> rill_status {
    RILL_CHECK(check_session(fn, session));
    RILL_CHECK(check_eos(fn, session->vocab_size, ids, count));
    session->eos_ids.assign(ids, ids + count);
    return RILL_OK;
  });
}

RILL_API rill_status rill_session_append_ids(rill_session* session, const int32_t* ids, size_t count) {
  constexpr const char* fn = "rill_session_append_ids";
  return rill::guarded(fn, [&]() -> rill_status {
    RILL_CHECK(check_session(fn, session));
    return rill::generate::session_append(fn, *session, ids, count);
  });
}

RILL_API rill_status rill_session_set_ids(rill_session* session, const int32_t* ids, size_t count) {
  constexpr const char* fn = "rill_session_set_ids";
  return rill::guarded(fn, [&]() -> rill_status {
    RILL_CHECK(check_session(fn, session));
    return rill::generate::session_set(fn, *session, ids, count);
  });
}

RILL_API rill_status rill_session_rewind(rill_session* session, int32_t length) {
  constexpr const char* fn = "rill_session_rewind";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    RILL_CHECK(check_session(f, session));
    const size_t size = session->tokens.size();
    if (length < 0 || static_cast<size_t>(length) > size) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": length: expected 0 to " + std::to_string(size) +
                                                         " (the session's length), got " + std::to_string(length));
    }
    return rill::generate::session_rewind(*session, length);
  });
}

RILL_API rill_status rill_session_get_ids(const rill_session* session, int32_t* ids, size_t capacity, size_t* out_count) {
  constexpr const char* fn = "rill_session_get_ids";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    RILL_CHECK(check_session(f, session));
    if (out_count == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out_count: expected a pointer, got NULL");
    const size_t count = session->tokens.size();
    *out_count = count;
    if (capacity < count) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": capacity: expected >= " + std::to_string(count) +
                                                         " (the session's length), got " + std::to_string(capacity));
    }
    if (count > 0 && ids == nullptr)
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": ids: expected a pointer, got NULL");
    std::copy(session->tokens.begin(), session->tokens.end(), ids);
    return RILL_OK;
  });
}

RILL_API rill_status rill_session_step(rill_session* session, int32_t max_forwards, rill_token_fn on_token,
                                       void* user_data, int32_t* out_generated, rill_stop_reason* out_reason) {
  constexpr const char* fn = "rill_session_step";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    RILL_CHECK(check_session(f, session));
    if (max_forwards < 1)
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": max_forwards: expected >= 1, got " + std::to_string(max_forwards));
    if (session->tokens.empty()) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                        f + ": session: expected a prompt, got an empty conversation (append ids or text first)");
    }
    CallbackSink ids_sink(on_token, user_data);
    TextSink text_sink(session->text, on_token, user_data);
    rill::generate::TokenSink& sink = session->text.tokenizer != nullptr ? static_cast<rill::generate::TokenSink&>(text_sink)
                                                                         : ids_sink;
    int32_t generated = 0;
    rill_stop_reason reason = RILL_STOP_NONE;
    const rill_status status = rill::generate::session_step(*session, max_forwards, sink, generated, reason);
    if (status != RILL_OK) return status;
    if (out_generated != nullptr) *out_generated = generated;
    if (out_reason != nullptr) *out_reason = reason;
    return RILL_OK;
  });
}

RILL_API void rill_session_cancel(rill_session* session) {
  if (session != nullptr) session->cancelled.store(true);
}

}  // extern "C"
