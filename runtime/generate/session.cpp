#include "session.h"

#include <algorithm>

#include "errors.h"
#include "sampler.h"

namespace rill::generate {
namespace {

std::string str(size_t n) { return std::to_string(n); }

rill_status check_ids(const std::string& f, const rill_session& session, const int32_t* ids, size_t count,
                      size_t kept) {
  if (ids == nullptr && count != 0)
    return fail(RILL_ERROR_INVALID_ARGUMENT, f + ": ids: expected a pointer for count " + str(count) + ", got NULL");
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= session.vocab_size) {
      return fail(RILL_ERROR_INVALID_ARGUMENT, f + ": ids: expected token ids in [0, " +
                                                   std::to_string(session.vocab_size - 1) + "], got " +
                                                   std::to_string(ids[i]) + " at " + str(i));
    }
  }
  if (kept + count > static_cast<size_t>(session.capacity)) {
    return fail(RILL_ERROR_INVALID_ARGUMENT, f + ": the session would hold " + str(kept + count) +
                                                 " tokens, more than its capacity of " +
                                                 std::to_string(session.capacity) +
                                                 " (rewind it, or create it with a larger capacity)");
  }
  return RILL_OK;
}

// Drops cached tokens from position length on.
rill_status shorten_cache(rill_session& session, int32_t length) {
  if (length >= session.cached) return RILL_OK;
  RILL_CHECK(rill_kv_cache_set_length(session.cache, 0, length));
  session.cached = length;
  return RILL_OK;
}

}  // namespace

rill_status session_append(const char* function, rill_session& session, const int32_t* ids, size_t count) {
  RILL_CHECK(check_ids(function, session, ids, count, session.tokens.size()));
  // What can fail comes first, so that a failure appends nothing.
  session.tokens.reserve(session.tokens.size() + count);
  RILL_CHECK(session.text.restart());
  session.tokens.insert(session.tokens.end(), ids, ids + count);
  session.generated = 0;
  return RILL_OK;
}

rill_status session_set(const char* function, rill_session& session, const int32_t* ids, size_t count) {
  RILL_CHECK(check_ids(function, session, ids, count, 0));
  // What can fail comes first, so that a failure changes nothing.
  session.tokens.reserve(count);
  RILL_CHECK(session.text.restart());
  const size_t cached = static_cast<size_t>(session.cached);
  size_t shared = 0;
  while (shared < cached && shared < count && session.tokens[shared] == ids[shared]) ++shared;
  RILL_CHECK(shorten_cache(session, static_cast<int32_t>(shared)));
  session.tokens.assign(ids, ids + count);
  session.generated = 0;
  return RILL_OK;
}

rill_status session_rewind(rill_session& session, int32_t length) {
  RILL_CHECK(session.text.restart());  // first: the only part that can fail
  RILL_CHECK(shorten_cache(session, length));
  session.tokens.resize(static_cast<size_t>(length));
  session.generated = 0;
  return RILL_OK;
}

rill_status session_step(rill_session& session, int32_t max_forwards, TokenSink& sink, int32_t& generated,
                         rill_stop_reason& reason) {
  generated = 0;
  reason = RILL_STOP_NONE;
  std::vector<double> probabilities;
  for (int32_t forward = 0; forward < max_forwards; ++forward) {
    if (session.cancelled.exchange(false)) {
      reason = RILL_STOP_CANCELLED;
      break;
    }
    // Every token already in the cache: run the last one again for its logits.
    if (session.cached == static_cast<int32_t>(session.tokens.size())) RILL_CHECK(shorten_cache(session, session.cached - 1));
    const int32_t pending = static_cast<int32_t>(session.tokens.size()) - session.cached;
    const int32_t n = std::min(pending, session.prefill_chunk);
    const bool samples = n == pending;
    if (samples && static_cast<int32_t>(session.tokens.size()) >= session.capacity) {
      reason = RILL_STOP_CAPACITY;
      break;
    }
    RILL_CHECK(rill_lm_logits(session.lm, session.cache, 1, n, session.tokens.data() + session.cached, 1,
                              session.logits.data(), session.logits.size()));
    session.cached += n;
    if (!samples) continue;

    const std::string problem = check_inputs(session.logits.data(), session.logits.size(), nullptr, 0);
    if (!problem.empty()) return fail(RILL_ERROR_BACKEND, "rill_session_step: the model's " + problem);
    session.tokens.reserve(session.tokens.size() + 1);  // before the draw: a failure then draws nothing
    const Random before_draw = session.random;
    const int32_t token = sample(session.sampler, session.logits.data(), session.logits.size(),
                                 session.tokens.data(), session.tokens.size(), probabilities, session.random);
    session.tokens.push_back(token);
    if (std::find(session.eos_ids.begin(), session.eos_ids.end(), token) != session.eos_ids.end()) {
      reason = RILL_STOP_EOS;
    } else if (session.max_new_tokens > 0 && session.generated + 1 >= session.max_new_tokens) {
      reason = RILL_STOP_MAX_NEW_TOKENS;
    }
    const bool full = static_cast<int32_t>(session.tokens.size()) >= session.capacity;
    rill_stop_reason asked = RILL_STOP_NONE;
    const rill_status sunk =
        guarded("rill_session_step", [&] { return sink.token(token, reason != RILL_STOP_NONE || full, asked); });
    if (sunk != RILL_OK) {  // the token is taken back, as if never drawn
      session.tokens.pop_back();
      session.random = before_draw;
      return sunk;
    }
    ++generated;
    ++session.generated;
    if (reason == RILL_STOP_NONE) reason = asked;
    if (reason != RILL_STOP_NONE) break;
  }
  if (reason != RILL_STOP_NONE) session.generated = 0;
  return RILL_OK;
}

}  // namespace rill::generate
