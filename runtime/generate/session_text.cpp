#include "session_text.h"

#include <vector>

#include "errors.h"
#include "tokenizer/handles.h"

namespace rill::generate {
namespace {

// Calls write(buf, size, &len) with a buffer that grows to the size the call
// asks for; write leaves its object unchanged when the buffer is too small.
template <class Write>
rill_status read_text(Write&& write, std::string& out) {
  std::vector<char> buf(256);
  size_t length = 0;
  rill_status status = write(buf.data(), buf.size(), &length);
  if (status == RILL_ERROR_INVALID_ARGUMENT && length + 1 > buf.size()) {
    buf.resize(length + 1);
    status = write(buf.data(), buf.size(), &length);
  }
  if (status != RILL_OK) return status;
  out.append(buf.data(), length);
  return RILL_OK;
}

}  // namespace

rill_status SessionText::restart() {
  if (detokenizer != nullptr) {
    std::string dropped;
    RILL_CHECK(read_text(
        [&](char* b, size_t n, size_t* len) { return rill_detokenizer_flush(detokenizer, b, n, len); }, dropped));
  }
  stops.drop();  // after what can fail
  return RILL_OK;
}

// A step that fails takes its token back, and the streamed text must not keep
// it either. The detokenizer's state (the ids whose text is still pending) is
// worked on a copy, kept once the stop strings, the last call that can fail,
// have taken the text; they change nothing when they fail.
void SessionText::push(int32_t token, bool last, std::string& out, bool& matched) {
  rill::Tokenizer::StreamDecoder decoder = detokenizer->decoder;
  std::string piece;
  if (token < vocab_size) piece = decoder.push(token);
  if (last) piece += decoder.finish();
  out = stops.push(piece, last, matched);
  detokenizer->decoder = std::move(decoder);
}

}  // namespace rill::generate
