// tokenizer.json's "pre_tokenizer": cutting normalized text into the pieces
// the model encodes one by one (Sequence, ByteLevel, Split, Metaspace, Digits,
// Whitespace, WhitespaceSplit, Punctuation).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_reader.h"
#include "tokenizer/split.h"

namespace rill::tok {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Cuts every text piece of pieces (added tokens pass through untouched).
  void apply(std::vector<Piece>& pieces) const;

 protected:
  // Appends the pieces that piece (a text piece) becomes.
  virtual void split(const Piece& piece, std::vector<Piece>& out) const = 0;
  friend class PreTokenizerSequence;
};

// The pre-tokenizer described by value (not null).
std::unique_ptr<PreTokenizer> load_pre_tokenizer(const Json& value, const JsonAt& at);

// Pre-tokenizers built without a tokenizer.json (a GGUF vocabulary's); at
// names the place a pattern came from, for its errors.
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex, const JsonAt& at);
std::unique_ptr<PreTokenizer> make_regex_split(const std::string& pattern, SplitBehavior behavior, bool invert,
                                               const JsonAt& at);
std::unique_ptr<PreTokenizer> make_pre_tokenizer_sequence(std::vector<std::unique_ptr<PreTokenizer>> steps);

// GPT-2's pattern, which ByteLevel's use_regex applies.
extern const char* const kGpt2Pattern;

}  // namespace rill::tok
