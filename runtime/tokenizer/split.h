// The pieces a text is cut into before the model sees them, and the ways
// tokenizers' pre-tokenizers cut a piece at the matches of a pattern
// (SplitDelimiterBehavior).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/json_reader.h"

namespace rill::tok {

struct Piece {
  std::string text;
  bool at_input_start = false;  // begins at byte 0 of the encoded text (Metaspace's prepend_scheme "first")
  int32_t added_token = -1;     // the id of the added token this piece is, or -1 for text
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// behavior as tokenizer.json names it ("Removed", "Isolated", ...).
SplitBehavior parse_split_behavior(const Json& value, const JsonAt& at);

using Matches = std::vector<std::pair<size_t, size_t>>;

// Each character of text for which predicate holds, as a one-character match.
template <class Predicate>
Matches char_matches(const std::string& text, Predicate predicate);

// Cuts piece at matches (byte ranges, ascending, non-overlapping) as behavior
// says, inverting which parts count as matches when invert is set, and
// appends the non-empty results to out.
void split_piece(const Piece& piece, const Matches& matches, bool invert, SplitBehavior behavior,
                 std::vector<Piece>& out);

}  // namespace rill::tok

#include "tokenizer/utf8.h"

template <class Predicate>
rill::tok::Matches rill::tok::char_matches(const std::string& text, Predicate predicate) {
  Matches matches;
  size_t i = 0;
  while (i < text.size()) {
    const size_t begin = i;
    if (predicate(next_code_point(text, i))) matches.emplace_back(begin, i);
  }
  return matches;
}
