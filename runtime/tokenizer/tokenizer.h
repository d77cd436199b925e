// rill::Tokenizer: Hugging Face tokenizer.json files, read as the tokenizers
// library (0.21) defines them, for the BPE tokenizers of shipping decoder
// models. See docs/TOKENIZER.md for what is supported and what is refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rill.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"

namespace rill {

namespace gguf {
struct Contents;
}

class Tokenizer {
 public:
  // Loads path: a tokenizer.json file, a folder holding one (and maybe
  // tokenizer_config.json), or a .gguf file's tokenizer metadata. On failure returns RILL_ERROR_IO (a file that
  // cannot be read, malformed JSON) or RILL_ERROR_CONFIG (a field of the wrong
  // type, an unknown component) with rill_last_error() naming the file, the
  // JSON path and what was expected; out is left empty.
  static rill_status load(const std::string& path, const char* function, std::unique_ptr<Tokenizer>& out);

  // The ids of text (valid UTF-8), with the post-processor's special tokens
  // when add_special is set.
  std::vector<int32_t> encode(std::string_view text, bool add_special) const;

  // The text of ids; every id must be in [0, vocab_size()). Ids the
  // vocabulary skips (gaps) decode to nothing, as in tokenizers.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const;

  // The largest id + 1, added tokens included.
  int32_t vocab_size() const;
  // The id of token (an added token or a vocabulary entry), or -1.
  int32_t token_to_id(const std::string& token) const;
  // True when more ids may still change the text of ids ending in id: a
  // <0xNN> token under a decoder that renders byte runs as a whole.
  bool may_change_after(int32_t id) const;

  // Decodes ids one at a time. Each push returns the text that became
  // complete (never half a UTF-8 character); the pushes' texts followed by
  // finish() equal decode() of all the ids. Copyable, so that a caller can
  // try a push on a copy and keep it only when it succeeds.
  class StreamDecoder {
   public:
    StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
        : tokenizer_(&tokenizer), skip_special_(skip_special) {}
    std::string push(int32_t id);
    std::string finish();

   private:
    const Tokenizer* tokenizer_;
    bool skip_special_;
    // The ids since the context began: the context (already emitted, kept so
    // that the decoders see what precedes the new ids) and the ids after it.
    std::vector<int32_t> window_;
    size_t context_ids_ = 0;
    std::string context_text_;  // decode(context)
  };

 private:
  Tokenizer() = default;
  void load_json(const std::string& file, const std::string& text);
  void apply_tokenizer_config(const std::string& file, const std::string& text);
  void load_gguf(const std::string& path, const gguf::Contents& contents);
  void add_added_token(tok::AddedToken token);

  std::unique_ptr<tok::Normalizer> normalizer_;
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<tok::Bpe> model_;
  std::unique_ptr<tok::PostProcessor> post_processor_;
  std::unique_ptr<tok::Decoder> decoder_;
  tok::AddedTokens added_;
};

}  // namespace rill
