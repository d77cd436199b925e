// The session's text layer: a tokenizer for text prompts, a detokenizer for
// the text of generated tokens, and stop strings over that text.
#pragma once

#include <string>

#include "rill.h"
#include "stop_text.h"

namespace rill::generate {

struct SessionText {
  const rill_tokenizer* tokenizer = nullptr;  // borrowed; NULL: ids only
  rill_detokenizer* detokenizer = nullptr;    // owned; one per tokenizer
  int32_t vocab_size = 0;                     // the tokenizer's: a model may have more ids (padding rows)
  StopText stops;

  ~SessionText() { rill_detokenizer_destroy(detokenizer); }

  // Starts a new stream of generated text: what was held back is dropped.
  rill_status restart();

  // The text that token completes (none for an id past the tokenizer's
  // vocabulary), with stop strings applied; last: the generation ends here,
  // so everything held back comes out. Throws std::bad_alloc, leaving the
  // text state as it was.
  void push(int32_t token, bool last, std::string& out, bool& matched);
};

}  // namespace rill::generate
