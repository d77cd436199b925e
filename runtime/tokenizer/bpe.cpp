#include "tokenizer/bpe.h"

#include <cstdio>
#include <queue>

#include "tokenizer/utf8.h"

namespace rill::tok {

Bpe::Bpe(const Json& model, const JsonAt& at) {
  if (const Json* dropout = optional(model, "dropout")) {
    (at / "dropout").fail("only null is supported (BPE dropout makes encoding random), got " + dropout->dump());
  }
  const JsonAt vocab_at = at / "vocab";
  const Json& vocab = expect_object(required(model, at, "vocab"), vocab_at);
  for (const auto& [token, id_value] : vocab.items()) {
    const JsonAt token_at = vocab_at / token;
    const auto id = static_cast<int32_t>(expect_int(id_value, token_at, 0, INT32_MAX - 1));
    if (const std::string error = add_token(token, id); !error.empty()) vocab_at.fail(error);
  }

  const JsonAt merges_at = at / "merges";
  const Json* merges = optional(model, "merges");
  if (merges != nullptr) expect_array(*merges, merges_at);
  for (size_t rank = 0; merges != nullptr && rank < merges->size(); ++rank) {
    const Json& merge = (*merges)[rank];
    const JsonAt merge_at = merges_at[rank];
    std::string left, right;
    if (merge.is_string()) {
      const std::string text = expect_string(merge, merge_at);
      const size_t space = text.find(' ');
      if (space == std::string::npos) merge_at.fail("expected \"left right\", got '" + text + "'");
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2) {
      left = expect_string(merge[0], merge_at[0]);
      right = expect_string(merge[1], merge_at[1]);
    } else {
      merge_at.fail(std::string("expected \"left right\" or [left, right], got ") + merge.dump());
    }
    if (const std::string error = add_merge(left, right); !error.empty()) merge_at.fail(error);
  }

  Options options;
  if (const Json* unk = optional(model, "unk_token")) {
    const std::string token = expect_string(*unk, at / "unk_token");
    options.unk_id = token_to_id(token);
    if (options.unk_id < 0) (at / "unk_token").fail("'" + token + "' is not in the vocabulary");
  }
  continuing_subword_prefix_ = string_or(model, at, "continuing_subword_prefix", "");
  end_of_word_suffix_ = string_or(model, at, "end_of_word_suffix", "");
  options.fuse_unk = bool_or(model, at, "fuse_unk", false);
  options.byte_fallback = bool_or(model, at, "byte_fallback", false);
  options.ignore_merges = bool_or(model, at, "ignore_merges", false);
  finish(options);
}

std::string Bpe::add_token(const std::string& token, int32_t id) {
  if (find_invalid_utf8(token) != token.size()) return "token " + std::to_string(id) + " is not valid UTF-8";
  if (const auto it = id_to_token_.find(id); it != id_to_token_.end()) {
    return "id " + std::to_string(id) + " is given to both '" + it->second + "' and '" + token + "'";
  }
  if (const auto it = vocab_.find(token); it != vocab_.end()) {
    return "token " + std::to_string(id) + " ('" + token + "') is also token " + std::to_string(it->second);
  }
  id_to_token_.emplace(id, token);
  vocab_.emplace(token, id);
  if (id + 1 > size_) size_ = id + 1;
  return {};
}

std::string Bpe::add_merge(std::string_view left, std::string_view right) {
  const std::string joined = std::string(left).append(right);
  const int32_t a = token_to_id(left), b = token_to_id(right), merged = token_to_id(joined);
  if (a < 0 || b < 0 || merged < 0) {
    return "'" + std::string(a < 0 ? left : b < 0 ? right : std::string_view(joined)) + "' is not in the vocabulary";
  }
  // A pair listed twice keeps its first (highest-priority) rank.
  merges_.emplace(pair_key(a, b), Merge{merge_count_++, merged});
  return {};
}

void Bpe::finish(const Options& options) {
  options_ = options;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    byte_ids_[b] = token_to_id(name);
  }
}

const std::string* Bpe::id_to_token(int32_t id) const {
  const auto it = id_to_token_.find(id);
  return it == id_to_token_.end() ? nullptr : &it->second;
}

int32_t Bpe::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  return it == vocab_.end() ? -1 : it->second;
}

const Bpe::Merge* Bpe::find_merge(int32_t a, int32_t b) const {
  const auto it = merges_.find(pair_key(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

void Bpe::encode(const std::string& piece, std::vector<int32_t>& ids) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    const int32_t whole = token_to_id(piece);
    if (whole >= 0) {
      ids.push_back(whole);
      return;
    }
  }
  // The piece's characters as initial symbols, as tokenizers' BPE::merge_word:
  // an unknown character becomes its <0xNN> byte tokens (byte_fallback) or
  // the unknown token (consecutive ones fused with fuse_unk).
  std::vector<int32_t> symbols;
  int32_t pending_unk = -1;
  for (size_t i = 0; i < piece.size();) {
    const size_t begin = i;
    next_code_point(piece, i);
    std::string ch = piece.substr(begin, i - begin);
    if (begin > 0) ch.insert(0, continuing_subword_prefix_);
    if (i == piece.size()) ch += end_of_word_suffix_;
    const int32_t id = token_to_id(ch);
    if (id >= 0) {
      if (pending_unk >= 0) symbols.push_back(pending_unk);
      pending_unk = -1;
      symbols.push_back(id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all_bytes = true;
      for (const char c : ch) all_bytes = all_bytes && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all_bytes) {
        // tokenizers adds these before a pending unknown token.
        for (const char c : ch) symbols.push_back(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (options_.unk_id >= 0) {
      if (pending_unk >= 0 && !options_.fuse_unk) symbols.push_back(pending_unk);
      pending_unk = options_.unk_id;
    }
  }
  if (pending_unk >= 0) symbols.push_back(pending_unk);
  merge_all(symbols);
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

// Applies merges lowest rank first, leftmost first among equal ranks, as
// tokenizers' Word::merge_all: a queue of candidate pairs, stale entries skipped.
void Bpe::merge_all(std::vector<int32_t>& symbols) const {
  const int n = static_cast<int>(symbols.size());
  if (n < 2) return;
  std::vector<int> prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
  std::vector<bool> removed(static_cast<size_t>(n), false);
  for (int i = 0; i < n; ++i) {
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  for (int i = 0; i + 1 < n; ++i) {
    if (const Merge* m = find_merge(symbols[static_cast<size_t>(i)], symbols[static_cast<size_t>(i + 1)])) {
      queue.push({m->rank, i, m->new_id});
    }
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const auto pos = static_cast<size_t>(top.pos);
    if (removed[pos] || next[pos] < 0) continue;
    const auto right = static_cast<size_t>(next[pos]);
    const Merge* current = find_merge(symbols[pos], symbols[right]);
    if (current == nullptr || current->new_id != top.new_id) continue;
    symbols[pos] = top.new_id;
    removed[right] = true;
    next[pos] = next[right];
    if (next[right] >= 0) prev[static_cast<size_t>(next[right])] = top.pos;
    if (prev[pos] >= 0) {
      const auto left = static_cast<size_t>(prev[pos]);
      if (const Merge* m = find_merge(symbols[left], symbols[pos])) queue.push({m->rank, prev[pos], m->new_id});
    }
    if (next[pos] >= 0) {
      if (const Merge* m = find_merge(symbols[pos], symbols[static_cast<size_t>(next[pos])])) {
        queue.push({m->rank, top.pos, m->new_id});
      }
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (!removed[i]) symbols[kept++] = symbols[i];
  }
  symbols.resize(kept);
}

}  // namespace rill::tok
