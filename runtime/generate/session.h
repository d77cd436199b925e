// rill_session: one conversation with a language model. It holds every token
// of the conversation, the KV cache of those already run through the model,
// the sampler, and the stops. Each step runs a bounded number of forward
// passes, so a host's frame loop can spread generation over frames.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "random.h"
#include "rill.h"
#include "session_text.h"

struct rill_session {
  rill_lm* lm = nullptr;
  rill_kv_cache* cache = nullptr;
  int32_t vocab_size = 0;
  int32_t capacity = 0;
  int32_t prefill_chunk = 0;
  int32_t max_new_tokens = 0;  // per generation; 0: no budget
  rill_sampler_params sampler{};
  rill::generate::Random random{0};
  std::vector<int32_t> eos_ids;

  // The conversation: tokens[0, cached) are in the cache; the rest are
  // pending and run through the model on the next step.
  std::vector<int32_t> tokens;
  int32_t cached = 0;
  int32_t generated = 0;  // tokens generated since the last append, set or stop

  rill::generate::SessionText text;

  std::atomic<bool> cancelled{false};
  std::vector<float> logits;  // one row, reused
};

namespace rill::generate {

// Appends ids (each checked against the vocabulary and the capacity) to the
// pending tokens. function names the caller in messages.
rill_status session_append(const char* function, rill_session& session, const int32_t* ids, size_t count);

// Replaces the conversation with ids, keeping the cached prefix they share.
rill_status session_set(const char* function, rill_session& session, const int32_t* ids, size_t count);

// Shortens the conversation to length tokens.
rill_status session_rewind(rill_session& session, int32_t length);

// Where a step sends each generated token: the host's callback, directly or
// through the text layer. last: the generation stops after this token (an
// end-of-sequence id, the budget, the capacity), so text held back must come
// out now. Returns RILL_STOP_NONE to go on, or why to stop.
struct TokenSink {
  virtual ~TokenSink() = default;
  virtual rill_status token(int32_t token, bool last, rill_stop_reason& asked) = 0;
};

// Runs at most max_forwards forward passes: a prefill chunk, or a decode that
// ends in one sampled token. Returns the tokens generated and why it stopped.
rill_status session_step(rill_session& session, int32_t max_forwards, TokenSink& sink, int32_t& generated,
                         rill_stop_reason& reason);

}  // namespace rill::generate
