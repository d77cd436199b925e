// The C API of a session's text: its tokenizer, text prompts, stop strings
// (rill.h, "Generation sessions").
#include <string>
#include <vector>

#include "errors.h"
#include "session.h"

namespace {

rill_status check_session(const std::string& f, const rill_session* session) {
  if (session == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": session: expected a session, got NULL");
  return RILL_OK;
}

rill_status check_text(const std::string& f, const char* text, size_t text_bytes) {
  if (text == nullptr && text_bytes != 0) {
    return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                      f + ": text: expected a pointer for text_bytes " + std::to_string(text_bytes) + ", got NULL");
  }
  return RILL_OK;
}

// text encoded with the session's tokenizer into ids.
rill_status encode(const std::string& f, const rill_session& session, const char* text, size_t text_bytes,
                   uint32_t add_special_tokens, std::vector<int32_t>& ids) {
  if (session.text.tokenizer == nullptr) {
    return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                      f + ": session: expected a tokenizer for text (rill_session_set_tokenizer), got none");
  }
  RILL_CHECK(check_text(f, text, text_bytes));
  size_t count = 0;
  ids.resize(text_bytes + 8);  // a first guess; the call names the size it needs
  rill_status status = rill_tokenizer_encode(session.text.tokenizer, text ? text : "", text_bytes, add_special_tokens,
                                             ids.data(), ids.size(), &count);
  if (status == RILL_ERROR_INVALID_ARGUMENT && count > ids.size()) {
    ids.resize(count);
    status = rill_tokenizer_encode(session.text.tokenizer, text ? text : "", text_bytes, add_special_tokens,
                                   ids.data(), ids.size(), &count);
  }
  RILL_CHECK(status);
  ids.resize(count);
  return RILL_OK;
}

}  // namespace

extern "C" {

RILL_API rill_status rill_session_set_tokenizer(rill_session* session, const rill_tokenizer* tokenizer) {
  constexpr const char* fn = "rill_session_set_tokenizer";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    RILL_CHECK(check_session(f, session));
    rill_detokenizer* detokenizer = nullptr;
    int32_t vocab = 0;
    if (tokenizer != nullptr) {
      RILL_CHECK(rill_tokenizer_vocab_size(tokenizer, &vocab));
      if (vocab > session->vocab_size) {
        return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": tokenizer: expected at most the model's " +
                                                           std::to_string(session->vocab_size) + " tokens, got " +
                                                           std::to_string(vocab));
      }
      RILL_CHECK(rill_detokenizer_create(tokenizer, 1, &detokenizer));
    }
    rill_detokenizer_destroy(session->text.detokenizer);
    session->text.detokenizer = detokenizer;
    session->text.tokenizer = tokenizer;
    session->text.vocab_size = vocab;
    session->text.stops.drop();
    return RILL_OK;
  });
}

RILL_API rill_status rill_session_append_text(rill_session* session, const char* text, size_t text_bytes,
                                              uint32_t add_special_tokens) {
  constexpr const char* fn = "rill_session_append_text";
  return rill::guarded(fn, [&]() -> rill_status {
    RILL_CHECK(check_session(fn, session));
    std::vector<int32_t> ids;
    RILL_CHECK(encode(fn, *session, text, text_bytes, add_special_tokens, ids));
    return rill::generate::session_append(fn, *session, ids.data(), ids.size());
  });
}

RILL_API rill_status rill_session_set_text(rill_session* session, const char* text, size_t text_bytes,
                                           uint32_t add_special_tokens) {
  constexpr const char* fn = "rill_session_set_text";
  return rill::guarded(fn, [&]() -> rill_status {
    RILL_CHECK(check_session(fn, session));
    std::vector<int32_t> ids;
    RILL_CHECK(encode(fn, *session, text, text_bytes, add_special_tokens, ids));
    return rill::generate::session_set(fn, *session, ids.data(), ids.size());
  });
}

RILL_API rill_status rill_session_add_stop_string(rill_session* session, const char* text, size_t text_bytes) {
  constexpr const char* fn = "rill_session_add_stop_string";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    RILL_CHECK(check_session(f, session));
    RILL_CHECK(check_text(f, text, text_bytes));
    if (text_bytes == 0) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": text_bytes: expected >= 1, got 0");
    session->text.stops.add(std::string(text, text_bytes));
    return RILL_OK;
  });
}

RILL_API rill_status rill_session_clear_stop_strings(rill_session* session) {
  constexpr const char* fn = "rill_session_clear_stop_strings";
  return rill::guarded(fn, [&]() -> rill_status {
    RILL_CHECK(check_session(fn, session));
    session->text.stops.clear_stops();
    return RILL_OK;
  });
}

}  // extern "C"
