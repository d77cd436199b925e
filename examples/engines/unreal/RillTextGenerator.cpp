// RillTextGenerator.cpp: see RillTextGenerator.h.
#include "RillTextGenerator.h"

#include <algorithm>
#include <chrono>
#include <cstring>

FRillTextGenerator::~FRillTextGenerator() {
  rill_session_destroy(session_);  // before the tokenizer it borrows
  rill_tokenizer_destroy(tokenizer_);
  rill_lm_destroy(lm_);
  rill_context_destroy(context_);
}

bool FRillTextGenerator::Fail(const char* what, rill_status status) {
  error_ = std::string(what) + ": " + rill_status_string(status) + ": " + rill_last_error();
  return false;
}

bool FRillTextGenerator::Load(const char* model_path, const char* backend, const char* prompt, uint64_t seed,
                              int32_t max_new_tokens) {
  if (context_ != nullptr) {
    error_ = "Load: already loaded";
    return false;
  }
  const std::string config = std::string("[runtime]\nbackend = \"") + backend + "\"\n";
  rill_status status = rill_context_create(config.c_str(), &context_);
  if (status != RILL_OK) return Fail("context", status);
  if ((status = rill_lm_load(context_, model_path, nullptr, &lm_)) != RILL_OK) return Fail("model", status);
  if ((status = rill_tokenizer_load(model_path, &tokenizer_)) != RILL_OK) return Fail("tokenizer", status);
  rill_session_options options;
  rill_session_options_init(&options, lm_);
  options.max_new_tokens = max_new_tokens;
  options.sampler.seed = seed;
  if ((status = rill_session_create(lm_, &options, &session_)) != RILL_OK) return Fail("session", status);
  if ((status = rill_session_set_tokenizer(session_, tokenizer_)) != RILL_OK) return Fail("tokenizer", status);
  status = rill_session_append_text(session_, prompt, std::strlen(prompt), 1);
  return status == RILL_OK || Fail("prompt", status);
}

int FRillTextGenerator::OnToken(void* user_data, int32_t, const char* text, size_t text_len) {
  if (text != nullptr) static_cast<FRillTextGenerator*>(user_data)->text_.append(text, text_len);
  return 0;
}

bool FRillTextGenerator::Tick(double budget_ms) {
  if (session_ == nullptr) {
    error_ = "Tick: Load has not succeeded";
    return false;
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point frame_start = Clock::now();
  const auto elapsed_ms = [](Clock::time_point since) {
    return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
  };
  do {
    const Clock::time_point step_start = Clock::now();
    rill_stop_reason reason = RILL_STOP_NONE;
    const rill_status status = rill_session_step(session_, 1, &FRillTextGenerator::OnToken, this, nullptr, &reason);
    if (status != RILL_OK) return Fail("step", status);
    slowest_step_ms_ = std::max(slowest_step_ms_, elapsed_ms(step_start));
    done_ = reason != RILL_STOP_NONE;
  } while (!done_ && elapsed_ms(frame_start) + slowest_step_ms_ <= budget_ms);
  return true;
}
