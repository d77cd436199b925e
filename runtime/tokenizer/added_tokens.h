// Added tokens ("added_tokens" in tokenizer.json): matched in the text before
// the model sees it, as tokenizers' AddedVocabulary does. Tokens with
// normalized false are cut out of the raw text; the rest of the text is then
// normalized, and tokens with normalized true are cut out of that, matched in
// their normalized form. Matching is leftmost-longest.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/split.h"

namespace rill::tok {

class Normalizer;

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
};

class AddedTokens {
 public:
  // Adds token (a content already added is ignored). normalizer: the
  // tokenizer's, to find normalized tokens in normalized text; may be null.
  void add(const AddedToken& token, const Normalizer* normalizer);

  // Cuts the added tokens of one kind (normalized or not) out of every text piece.
  void split(std::vector<Piece>& pieces, bool normalized) const;

  // The added token with this id or content, or nullptr.
  const AddedToken* by_id(int32_t id) const;
  const AddedToken* by_content(const std::string& content) const;
  // True when content is the content of a special token.
  bool is_special(const std::string& content) const { return special_contents_.count(content) != 0; }
  // The largest id + 1 (0 without added tokens).
  int32_t size() const { return size_; }

 private:
  struct Pattern {
    std::string text;  // what is matched: the content, normalized for normalized tokens
    size_t token;      // index in tokens_
  };
  void split_one(const Piece& piece, const std::vector<Pattern>& patterns,
                 const std::vector<std::vector<size_t>>& by_first_byte, std::vector<Piece>& out) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_set<std::string> special_contents_;
  // Patterns per kind ([0] raw, [1] normalized), indexed by their first byte.
  std::vector<Pattern> patterns_[2];
  std::vector<std::vector<size_t>> by_first_byte_[2];
  int32_t size_ = 0;
};

}  // namespace rill::tok
