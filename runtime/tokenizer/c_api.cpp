// The tokenizer section of rill.h: rill_tokenizer_* and rill_detokenizer_*.
#include <cstring>
#include <memory>
#include <string>

#include "errors.h"
#include "rill.h"
#include "tokenizer/handles.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

rill_status null_argument(const char* fn, const char* name, const char* expected) {
  return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                    std::string(fn) + ": " + name + ": expected " + expected + ", got NULL");
}

// Every id in [0, vocab).
rill_status check_ids(const char* fn, const int32_t* ids, size_t count, int32_t vocab) {
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": ids[" + std::to_string(i) +
                                                         "]: expected a token id from 0 to " +
                                                         std::to_string(vocab - 1) + " (vocab_size " +
                                                         std::to_string(vocab) + "), got " + std::to_string(ids[i]));
    }
  }
  return RILL_OK;
}

// Writes text and its NUL to buf, following rill_info_report's convention;
// *out_size receives text.size() + size_extra (the NUL counted or not).
rill_status write_text(const char* fn, const std::string& text, char* buf, size_t buf_size, size_t* out_size,
                       size_t size_extra) {
  const size_t required = text.size() + 1;
  if (buf != nullptr && buf_size < required) {
    *out_size = text.size() + size_extra;
    return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                      std::string(fn) + ": buf_size: expected at least " + std::to_string(required) +
                          " bytes (the text and its NUL), got " + std::to_string(buf_size));
  }
  if (buf != nullptr) std::memcpy(buf, text.c_str(), required);
  *out_size = text.size() + size_extra;
  return RILL_OK;
}

rill_status check_buffer(const char* fn, const void* buf, size_t size, const char* buf_name, const char* size_name) {
  if (buf == nullptr && size != 0) {
    return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + buf_name + ": expected a buffer of " +
                                                       size_name + " " + std::to_string(size) + ", got NULL");
  }
  return RILL_OK;
}

}  // namespace

extern "C" {

RILL_API rill_status rill_tokenizer_load(const char* path, rill_tokenizer** out) {
  constexpr const char* fn = "rill_tokenizer_load";
  return rill::guarded(fn, [&]() -> rill_status {
    if (path == nullptr) return null_argument(fn, "path", "a tokenizer.json file or a folder holding one");
    if (out == nullptr) return null_argument(fn, "out", "a pointer to receive the tokenizer");
    std::unique_ptr<rill::Tokenizer> impl;
    RILL_CHECK(rill::Tokenizer::load(path, fn, impl));
    *out = new rill_tokenizer{std::move(impl)};
    return RILL_OK;
  });
}

RILL_API void rill_tokenizer_destroy(rill_tokenizer* tokenizer) { delete tokenizer; }

RILL_API rill_status rill_tokenizer_vocab_size(const rill_tokenizer* tokenizer, int32_t* out) {
  constexpr const char* fn = "rill_tokenizer_vocab_size";
  return rill::guarded(fn, [&] {
    if (tokenizer == nullptr) return null_argument(fn, "tokenizer", "a tokenizer");
    if (out == nullptr) return null_argument(fn, "out", "a pointer to receive the size");
    *out = tokenizer->impl->vocab_size();
    return RILL_OK;
  });
}

RILL_API rill_status rill_tokenizer_encode(const rill_tokenizer* tokenizer, const char* text, size_t text_bytes,
                                           uint32_t add_special_tokens, int32_t* ids, size_t capacity,
                                           size_t* out_count) {
  constexpr const char* fn = "rill_tokenizer_encode";
  return rill::guarded(fn, [&]() -> rill_status {
    if (tokenizer == nullptr) return null_argument(fn, "tokenizer", "a tokenizer");
    if (text == nullptr && text_bytes != 0) return null_argument(fn, "text", "text of text_bytes bytes");
    if (out_count == nullptr) return null_argument(fn, "out_count", "a pointer to receive the id count");
    RILL_CHECK(check_buffer(fn, ids, capacity, "ids", "capacity"));
    const std::string_view view(text_bytes ? text : "", text_bytes);
    const size_t invalid = rill::tok::find_invalid_utf8(view);
    if (invalid != view.size()) {
      return rill::fail(
          RILL_ERROR_INVALID_ARGUMENT,
          std::string(fn) + ": text: expected UTF-8, got an invalid byte sequence at byte " + std::to_string(invalid));
    }
    const std::vector<int32_t> result = tokenizer->impl->encode(view, add_special_tokens != 0);
    if (ids != nullptr && capacity < result.size()) {
      *out_count = result.size();
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": capacity: expected at least " +
                                                         std::to_string(result.size()) + " ids, got " +
                                                         std::to_string(capacity));
    }
    if (ids != nullptr && !result.empty()) std::memcpy(ids, result.data(), result.size() * sizeof(int32_t));
    *out_count = result.size();
    return RILL_OK;
  });
}

RILL_API rill_status rill_tokenizer_decode(const rill_tokenizer* tokenizer, const int32_t* ids, size_t count,
                                           uint32_t skip_special_tokens, char* buf, size_t buf_size,
                                           size_t* out_required) {
  constexpr const char* fn = "rill_tokenizer_decode";
  return rill::guarded(fn, [&]() -> rill_status {
    if (tokenizer == nullptr) return null_argument(fn, "tokenizer", "a tokenizer");
    if (ids == nullptr && count != 0) return null_argument(fn, "ids", "count token ids");
    if (out_required == nullptr) return null_argument(fn, "out_required", "a pointer to receive the size");
    RILL_CHECK(check_buffer(fn, buf, buf_size, "buf", "buf_size"));
    RILL_CHECK(check_ids(fn, ids, count, tokenizer->impl->vocab_size()));
    const std::vector<int32_t> list(ids, ids + count);
    return write_text(fn, tokenizer->impl->decode(list, skip_special_tokens != 0), buf, buf_size, out_required, 1);
  });
}

RILL_API rill_status rill_tokenizer_token_to_id(const rill_tokenizer* tokenizer, const char* token, int32_t* out_id) {
  constexpr const char* fn = "rill_tokenizer_token_to_id";
  return rill::guarded(fn, [&]() -> rill_status {
    if (tokenizer == nullptr) return null_argument(fn, "tokenizer", "a tokenizer");
    if (token == nullptr) return null_argument(fn, "token", "a token string");
    if (out_id == nullptr) return null_argument(fn, "out_id", "a pointer to receive the id");
    const int32_t id = tokenizer->impl->token_to_id(token);
    if (id < 0)
      return rill::fail(RILL_ERROR_NOT_FOUND, std::string(fn) + ": token: '" + token + "' is not in the vocabulary");
    *out_id = id;
    return RILL_OK;
  });
}

RILL_API rill_status rill_detokenizer_create(const rill_tokenizer* tokenizer, uint32_t skip_special_tokens,
                                             rill_detokenizer** out) {
  constexpr const char* fn = "rill_detokenizer_create";
  return rill::guarded(fn, [&]() -> rill_status {
    if (tokenizer == nullptr) return null_argument(fn, "tokenizer", "a tokenizer");
    if (out == nullptr) return null_argument(fn, "out", "a pointer to receive the detokenizer");
    *out = new rill_detokenizer{tokenizer, rill::Tokenizer::StreamDecoder(*tokenizer->impl, skip_special_tokens != 0)};
    return RILL_OK;
  });
}

RILL_API rill_status rill_detokenizer_push(rill_detokenizer* detokenizer, int32_t id, char* buf, size_t buf_size,
                                           size_t* out_len) {
  constexpr const char* fn = "rill_detokenizer_push";
  return rill::guarded(fn, [&]() -> rill_status {
    if (detokenizer == nullptr) return null_argument(fn, "detokenizer", "a detokenizer");
    if (out_len == nullptr) return null_argument(fn, "out_len", "a pointer to receive the text length");
    RILL_CHECK(check_buffer(fn, buf, buf_size, "buf", "buf_size"));
    RILL_CHECK(check_ids(fn, &id, 1, detokenizer->tokenizer->impl->vocab_size()));
    // Pushed on a copy, kept only when the text fits: a failed call changes nothing.
    rill::Tokenizer::StreamDecoder next = detokenizer->decoder;
    const std::string text = next.push(id);
    RILL_CHECK(write_text(fn, text, buf, buf_size, out_len, 0));
    if (buf != nullptr) detokenizer->decoder = std::move(next);
    return RILL_OK;
  });
}

RILL_API rill_status rill_detokenizer_flush(rill_detokenizer* detokenizer, char* buf, size_t buf_size,
                                            size_t* out_len) {
  constexpr const char* fn = "rill_detokenizer_flush";
  return rill::guarded(fn, [&]() -> rill_status {
    if (detokenizer == nullptr) return null_argument(fn, "detokenizer", "a detokenizer");
    if (out_len == nullptr) return null_argument(fn, "out_len", "a pointer to receive the text length");
    RILL_CHECK(check_buffer(fn, buf, buf_size, "buf", "buf_size"));
    rill::Tokenizer::StreamDecoder next = detokenizer->decoder;
    const std::string text = next.finish();
    RILL_CHECK(write_text(fn, text, buf, buf_size, out_len, 0));
    if (buf != nullptr) detokenizer->decoder = std::move(next);
    return RILL_OK;
  });
}

RILL_API void rill_detokenizer_destroy(rill_detokenizer* detokenizer) { delete detokenizer; }

}  // extern "C"
