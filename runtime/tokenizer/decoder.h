// tokenizer.json's "decoder": from token strings back to text (ByteLevel,
// Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence), each a step of
// tokenizers' decode_chain; the chain's output is concatenated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_reader.h"

namespace rill::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // True when a run of <0xNN> tokens is rendered as a whole (ByteFallback):
  // a later byte token can then change the text of earlier ones.
  virtual bool renders_byte_runs() const { return false; }
};

// The byte a "<0xNN>" token stands for in ByteFallback, or -1.
int byte_fallback_byte(const std::string& token);

// Decoders built without a tokenizer.json (a GGUF vocabulary's).
std::unique_ptr<Decoder> make_byte_level_decoder();
// Every occurrence of pattern (a literal) replaced by content.
std::unique_ptr<Decoder> make_replace_decoder(std::string pattern, std::string content);
std::unique_ptr<Decoder> make_byte_fallback_decoder();
std::unique_ptr<Decoder> make_fuse_decoder();
// Up to start leading and stop trailing copies of content off every token.
std::unique_ptr<Decoder> make_strip_decoder(uint32_t content, size_t start, size_t stop);
std::unique_ptr<Decoder> make_decoder_sequence(std::vector<std::unique_ptr<Decoder>> steps);

// The decoder described by value (not null).
std::unique_ptr<Decoder> load_decoder(const Json& value, const JsonAt& at);

}  // namespace rill::tok
