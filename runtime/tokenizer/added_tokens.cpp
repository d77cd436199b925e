#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace rill::tok {

void AddedTokens::add(const AddedToken& token, const Normalizer* normalizer) {
  if (by_content_.count(token.content) != 0 || token.content.empty()) return;
  const size_t index = tokens_.size();
  tokens_.push_back(token);
  by_id_.emplace(token.id, index);
  by_content_.emplace(token.content, index);
  if (token.special) special_contents_.insert(token.content);
  if (token.id + 1 > size_) size_ = token.id + 1;
  const int kind = token.normalized ? 1 : 0;
  std::string text = token.normalized && normalizer ? normalizer->normalize(token.content) : token.content;
  if (text.empty()) return;
  auto& table = by_first_byte_[kind];
  if (table.empty()) table.resize(256);
  table[static_cast<uint8_t>(text[0])].push_back(patterns_[kind].size());
  patterns_[kind].push_back({std::move(text), index});
}

const AddedToken* AddedTokens::by_id(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedTokens::by_content(const std::string& content) const {
  const auto it = by_content_.find(content);
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

void AddedTokens::split(std::vector<Piece>& pieces, bool normalized) const {
  const int kind = normalized ? 1 : 0;
  if (patterns_[kind].empty()) return;
  std::vector<Piece> out;
  for (Piece& piece : pieces) {
    if (piece.added_token >= 0) {
      out.push_back(std::move(piece));
    } else {
      split_one(piece, patterns_[kind], by_first_byte_[kind], out);
    }
  }
  pieces = std::move(out);
}

namespace {

// Rust regex's Unicode \w: alphabetic, marks, decimal digits, connector
// punctuation and the joiners.
bool is_word_char(uint32_t cp) {
  if (cp == 0x200C || cp == 0x200D) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

uint32_t last_code_point(const std::string& s, size_t end) {
  size_t begin = end - 1;
  while (begin > 0 && (static_cast<uint8_t>(s[begin]) & 0xC0) == 0x80) --begin;
  return next_code_point(s, begin);
}

}  // namespace

void AddedTokens::split_one(const Piece& piece, const std::vector<Pattern>& patterns,
                            const std::vector<std::vector<size_t>>& by_first_byte, std::vector<Piece>& out) const {
  const std::string& text = piece.text;
  size_t done = 0;  // text before this is already in out
  const auto emit_text = [&](size_t begin, size_t end) {
    if (end > begin) out.push_back({text.substr(begin, end - begin), piece.at_input_start && begin == 0, -1});
  };
  size_t at = 0;
  while (at < text.size()) {
    // The longest pattern starting here.
    const Pattern* best = nullptr;
    for (const size_t p : by_first_byte[static_cast<uint8_t>(text[at])]) {
      const Pattern& candidate = patterns[p];
      if ((best == nullptr || candidate.text.size() > best->text.size()) &&
          text.compare(at, candidate.text.size(), candidate.text) == 0) {
        best = &candidate;
      }
    }
    if (best == nullptr) {
      ++at;
      continue;
    }
    const AddedToken& token = tokens_[best->token];
    size_t start = at, stop = at + best->text.size();
    at = stop;
    if (token.single_word) {
      const bool word_before = start > 0 && is_word_char(last_code_point(text, start));
      size_t after = stop;
      const bool word_after = stop < text.size() && is_word_char(next_code_point(text, after));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      size_t new_start = start;
      while (new_start > done && is_whitespace(last_code_point(text, new_start))) {
        do --new_start;
        while ((static_cast<uint8_t>(text[new_start]) & 0xC0) == 0x80);
      }
      start = new_start;
    }
    if (token.rstrip) {
      for (size_t i = stop; i < text.size();) {
        if (!is_whitespace(next_code_point(text, i))) break;
        stop = i;
      }
    }
    emit_text(done, start);
    out.push_back({text.substr(start, stop - start), piece.at_input_start && start == 0, token.id});
    done = stop;
    // Scanning resumes after the stripped whitespace, so that pieces never overlap.
    if (stop > at) at = stop;
  }
  emit_text(done, text.size());
}

}  // namespace rill::tok
