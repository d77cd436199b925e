// tokenizer.json's "normalizer": text rewrites applied before pre-tokenizing
// (Sequence, NFC/NFD/NFKC/NFKD, Lowercase, Strip, Prepend, Replace).
#pragma once

#include <memory>
#include <string>
#include <vector>

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

// Normalizers built without a tokenizer.json (a GGUF vocabulary's).
std::unique_ptr<Normalizer> make_nfc_normalizer();
std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix);
// Every occurrence of pattern (a literal) replaced by content.
std::unique_ptr<Normalizer> make_replace_normalizer(std::string pattern, std::string content);
std::unique_ptr<Normalizer> make_normalizer_sequence(std::vector<std::unique_ptr<Normalizer>> steps);

// text with every occurrence of pattern (a literal, non-empty) replaced by content.
std::string replace_all(const std::string& text, const std::string& pattern, const std::string& content);

}  // namespace rill::tok
