// tokenizer.json's "model" of type BPE: byte-level (GPT-2, Llama 3, Qwen2)
// and SentencePiece-style (byte_fallback <0xNN> tokens, unk_token, fuse_unk).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_reader.h"

namespace rill::tok {

class Bpe {
 public:
  // Reads vocab, merges (as "a b" strings or [a, b] pairs) and options.
  // dropout other than null is refused (encoding would not be deterministic).
  Bpe(const Json& model, const JsonAt& at);

  // Built piece by piece (a GGUF vocabulary): add_token and add_merge return
  // what is wrong, or an empty string; finish sets the options.
  Bpe() = default;
  // token (valid UTF-8) with id in [0, INT32_MAX - 1]; neither may be taken.
  std::string add_token(const std::string& token, int32_t id);
  // The next merge, ranked after the ones before; left, right and left + right
  // must be tokens.
  std::string add_merge(std::string_view left, std::string_view right);
  struct Options {
    int32_t unk_id = -1;
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
  };
  void finish(const Options& options);

  // Appends the ids of piece (non-empty, valid UTF-8).
  void encode(const std::string& piece, std::vector<int32_t>& ids) const;

  // The token of id, or nullptr for an id the vocabulary lacks.
  const std::string* id_to_token(int32_t id) const;
  // The id of token, or -1.
  int32_t token_to_id(std::string_view token) const;
  // The largest id + 1.
  int32_t size() const { return size_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const Merge* find_merge(int32_t a, int32_t b) const;
  void merge_all(std::vector<int32_t>& symbols) const;

  std::unordered_map<std::string, int32_t> vocab_;
  // A map, not a vector: a hostile file may give a token an id near INT32_MAX.
  std::unordered_map<int32_t, std::string> id_to_token_;
  int32_t size_ = 0;
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t merge_count_ = 0;
  Options options_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  int32_t byte_ids_[256] = {};  // <0xNN> tokens, -1 where absent (set by finish)
};

}  // namespace rill::tok
