// A GGUF file's tokenizer metadata (tokenizer.ggml.*) as the tokenizer.json
// that Hugging Face's tokenizers would hold for the same vocabulary, so that
// Tokenizer::load_json stays the one reader of tokenizer components.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf_reader.h"

namespace rill::tok {

struct GgufVocab {
  std::string json;             // tokenizer.json text, post-processor left out
  std::vector<int32_t> prefix;  // BOS when tokenizer.ggml.add_bos_token is set
  std::vector<int32_t> suffix;  // EOS when tokenizer.ggml.add_eos_token is set
};

// Reads contents' tokenizer.ggml.* keys; throws LoadError (RILL_ERROR_CONFIG,
// or RILL_ERROR_UNSUPPORTED for a vocabulary kind or pre-tokenizer rill does
// not map) naming file and the key.
GgufVocab gguf_vocab(const gguf::Contents& contents, const std::string& file);

}  // namespace rill::tok
