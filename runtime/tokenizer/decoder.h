// tokenizer.json's "decoder": from token strings back to text (ByteLevel,
// Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence), each a step of
// tokenizers' decode_chain; the chain's output is concatenated.
#pragma once

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

// The decoder described by value (not null).
std::unique_ptr<Decoder> load_decoder(const Json& value, const JsonAt& at);

}  // namespace rill::tok
