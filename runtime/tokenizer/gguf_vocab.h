// A GGUF file's tokenizer metadata (tokenizer.ggml.*) as the tokenizer
// components that Hugging Face's tokenizer.json would describe for the same
// vocabulary (what transformers' converters write), built directly from the
// metadata.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf_reader.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace rill::tok {

struct GgufVocab {
  std::unique_ptr<Normalizer> normalizer;      // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<Bpe> model;
  std::unique_ptr<Decoder> decoder;
  std::vector<AddedToken> added;
  std::vector<int32_t> prefix;  // BOS when tokenizer.ggml.add_bos_token is set
  std::vector<int32_t> suffix;  // EOS when tokenizer.ggml.add_eos_token is set
};

// Reads contents' tokenizer.ggml.* keys; throws LoadError (RILL_ERROR_CONFIG,
// or RILL_ERROR_UNSUPPORTED for a vocabulary kind or pre-tokenizer rill does
// not map) naming file and the key.
GgufVocab gguf_vocab(const gguf::Contents& contents, const std::string& file);

}  // namespace rill::tok
