#include "tokenizer/split.h"

namespace rill::tok {

SplitBehavior parse_split_behavior(const Json& value, const JsonAt& at) {
  const std::string name = expect_string(value, at);
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  at.fail("expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous, got '" + name + "'");
}

namespace {

struct Span {
  size_t begin, end;
  bool is_match;
};

// The whole text as alternating spans, as tokenizers' Pattern::find_matches.
std::vector<Span> spans_of(size_t length, const Matches& matches, bool invert) {
  std::vector<Span> spans;
  size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (previous != begin) spans.push_back({previous, begin, invert});
    spans.push_back({begin, end, !invert});
    previous = end;
  }
  if (previous != length) spans.push_back({previous, length, invert});
  return spans;
}

// The spans that become pieces (is_match then means "drop it"), folded as
// tokenizers' NormalizedString::split does for each behavior.
std::vector<Span> apply_behavior(const std::vector<Span>& spans, SplitBehavior behavior) {
  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      return spans;
    case SplitBehavior::kIsolated:
      for (const Span& s : spans) out.push_back({s.begin, s.end, false});
      return out;
    case SplitBehavior::kContiguous:
      for (const Span& s : spans) {
        if (s.is_match == previous_match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back({s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      return out;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back({s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      return out;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) {
          out.back().begin = it->begin;
        } else {
          out.push_back({it->begin, it->end, false});
        }
        previous_match = it->is_match;
      }
      return {out.rbegin(), out.rend()};
  }
  return out;
}

}  // namespace

void split_piece(const Piece& piece, const Matches& matches, bool invert, SplitBehavior behavior,
                 std::vector<Piece>& out) {
  for (const Span& s : apply_behavior(spans_of(piece.text.size(), matches, invert), behavior)) {
    if (s.is_match || s.end == s.begin) continue;
    out.push_back({piece.text.substr(s.begin, s.end - s.begin), piece.at_input_start && s.begin == 0, -1});
  }
}

}  // namespace rill::tok
