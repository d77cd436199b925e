// The pre-tokenizers' regular expressions, through PCRE2 in UTF mode with
// Unicode properties (\p{L}, \p{N}) and its JIT where the platform has one.
// tokenizers matches with Oniguruma; the patterns tokenizer.json files ship
// (GPT-2's, Llama 3's, Qwen2's) mean the same in both.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/json_reader.h"

namespace rill::tok {

class Regex {
 public:
  // Compiles pattern; a pattern PCRE2 refuses fails naming at and PCRE2's reason.
  Regex(const std::string& pattern, const JsonAt& at);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every non-overlapping match in text (valid UTF-8), left to right, as byte
  // ranges. After an empty match the search resumes one character later.
  // Thread-safe.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  void* code_ = nullptr;  // pcre2_code_8
};

}  // namespace rill::tok
