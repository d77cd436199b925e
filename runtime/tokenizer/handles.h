// What rill.h's tokenizer handles hold, for the parts of librill that work
// on them directly (a session keeps its streamed text on copies of a
// detokenizer's state, so that a failed step can leave it as it was).
#pragma once

#include <memory>

#include "tokenizer/tokenizer.h"

struct rill_tokenizer {
  std::unique_ptr<rill::Tokenizer> impl;
};

struct rill_detokenizer {
  const rill_tokenizer* tokenizer;
  rill::Tokenizer::StreamDecoder decoder;
};
