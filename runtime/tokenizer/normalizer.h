// tokenizer.json's "normalizer": text rewrites applied before pre-tokenizing
// (Sequence, NFC/NFD/NFKC/NFKD, Lowercase, Strip, Prepend, Replace).
#pragma once

#include <memory>
#include <string>

#include "tokenizer/json_reader.h"

namespace rill::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // text (valid UTF-8) rewritten; the result is valid UTF-8.
  virtual std::string normalize(std::string text) const = 0;
};

// The normalizer described by value (not null).
std::unique_ptr<Normalizer> load_normalizer(const Json& value, const JsonAt& at);

// text with every occurrence of pattern (a literal, non-empty) replaced by content.
std::string replace_all(const std::string& text, const std::string& pattern, const std::string& content);

}  // namespace rill::tok
