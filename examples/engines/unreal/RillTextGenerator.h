// RillTextGenerator.h: text from a Hugging Face folder, generated a few
// forward passes per frame within a time budget, over rill's C API, for an
// Unreal game module (docs/EMBEDDING.md, "Unreal"): an actor owns one and
// calls Tick from its own Tick. Plain C++ without exceptions, as Unreal
// builds; an actor turns Text() into an FString with UTF8_TO_TCHAR. The tests
// compile it with -fno-exceptions against rill.h and run it on the demo model.
#pragma once

#include <rill.h>

#include <cstdint>
#include <string>

class FRillTextGenerator {
 public:
  FRillTextGenerator() = default;
  FRillTextGenerator(const FRillTextGenerator&) = delete;
  FRillTextGenerator& operator=(const FRillTextGenerator&) = delete;
  ~FRillTextGenerator();

  // Loads the folder on backend ("auto", "cpu", "vulkan", "cuda") and queues
  // prompt; sampling as the folder's generation_config.json, seeded. False
  // with Error() set on failure; call once.
  bool Load(const char* model_path, const char* backend, const char* prompt, uint64_t seed, int32_t max_new_tokens);

  // One frame's share: forward passes while budget_ms has room for the
  // slowest one seen, at least one. False with Error() set on failure.
  bool Tick(double budget_ms);

  bool Done() const { return done_; }
  const std::string& Text() const { return text_; }
  const std::string& Error() const { return error_; }

 private:
  bool Fail(const char* what, rill_status status);
  static int OnToken(void* user_data, int32_t token, const char* text, size_t text_len);

  rill_context* context_ = nullptr;
  rill_lm* lm_ = nullptr;
  rill_tokenizer* tokenizer_ = nullptr;
  rill_session* session_ = nullptr;
  double slowest_step_ms_ = 0.0;
  bool done_ = false;
  std::string text_;
  std::string error_;
};
