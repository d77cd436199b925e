#include "tokenizer/pre_tokenizer.h"

#include <utf8proc.h>

#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace rill::tok {

const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

void PreTokenizer::apply(std::vector<Piece>& pieces) const {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece& piece : pieces) {
    if (piece.added_token >= 0) {
      out.push_back(std::move(piece));
    } else {
      split(piece, out);
    }
  }
  pieces = std::move(out);
}

class PreTokenizerSequence final : public PreTokenizer {
 public:
  explicit PreTokenizerSequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}

 protected:
  void split(const Piece& piece, std::vector<Piece>& out) const override {
    std::vector<Piece> pieces{piece};
    for (const auto& step : steps_) step->apply(pieces);
    for (Piece& p : pieces) out.push_back(std::move(p));
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

namespace {

// Every byte of text as the character GPT-2's byte-level alphabet uses for it.
std::string to_byte_level(const std::string& text) {
  std::string out;
  out.reserve(text.size() * 2);
  for (const char c : text) append_utf8(out, byte_level_char(static_cast<uint8_t>(c)));
  return out;
}

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, const JsonAt& at) : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern, at);
  }

 protected:
  void split(const Piece& piece, std::vector<Piece>& out) const override {
    Piece prefixed = piece;
    if (add_prefix_space_ && !prefixed.text.empty() && prefixed.text[0] != ' ') prefixed.text.insert(0, 1, ' ');
    std::vector<Piece> parts;
    if (regex_) {
      split_piece(prefixed, regex_->find_all(prefixed.text), false, SplitBehavior::kIsolated, parts);
    } else if (!prefixed.text.empty()) {
      parts.push_back(std::move(prefixed));
    }
    for (Piece& p : parts) {
      p.text = to_byte_level(p.text);
      out.push_back(std::move(p));
    }
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

class SplitPattern final : public PreTokenizer {
 public:
  // Splits at regex's matches, or at literal's when regex is null.
  SplitPattern(std::string literal, std::unique_ptr<Regex> regex, SplitBehavior behavior, bool invert)
      : behavior_(behavior), invert_(invert), literal_(std::move(literal)), regex_(std::move(regex)) {}

 protected:
  void split(const Piece& piece, std::vector<Piece>& out) const override {
    if (!regex_ && literal_.empty()) {
      // tokenizers treats an empty literal as matching nothing.
      split_piece(piece, {}, invert_, behavior_, out);
      return;
    }
    split_piece(piece, regex_ ? regex_->find_all(piece.text) : literal_matches(piece.text), invert_, behavior_, out);
  }

 private:
  Matches literal_matches(const std::string& text) const {
    Matches matches;
    for (size_t at = text.find(literal_); at != std::string::npos; at = text.find(literal_, at + literal_.size())) {
      matches.emplace_back(at, at + literal_.size());
    }
    return matches;
  }

  SplitBehavior behavior_;
  bool invert_;
  std::string literal_;
  std::unique_ptr<Regex> regex_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(uint32_t replacement, PrependScheme scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {
    append_utf8(replacement_text_, replacement);
  }

 protected:
  void split(const Piece& piece, std::vector<Piece>& out) const override {
    Piece replaced{replace_all(piece.text, " ", replacement_text_), piece.at_input_start, -1};
    const bool starts_with_replacement = replaced.text.compare(0, replacement_text_.size(), replacement_text_) == 0;
    const bool prepend =
        !replaced.text.empty() && !starts_with_replacement &&
        (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && piece.at_input_start));
    if (prepend) replaced.text.insert(0, replacement_text_);
    if (!split_) {
      if (!replaced.text.empty()) out.push_back(std::move(replaced));
      return;
    }
    const uint32_t r = replacement_;
    split_piece(replaced, char_matches(replaced.text, [r](uint32_t cp) { return cp == r; }), false,
                SplitBehavior::kMergedWithNext, out);
  }

 private:
  uint32_t replacement_;
  std::string replacement_text_;
  PrependScheme scheme_;
  bool split_;
};

// Rust's char::is_numeric: the general categories Nd, Nl and No.
bool is_numeric(uint32_t cp) {
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool is_punctuation(uint32_t cp) {
  if (cp < 0x80)
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
           (cp >= 0x7B && cp <= 0x7E);
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

template <class Predicate>
class CharSplit final : public PreTokenizer {
 public:
  CharSplit(Predicate predicate, SplitBehavior behavior) : predicate_(predicate), behavior_(behavior) {}

 protected:
  void split(const Piece& piece, std::vector<Piece>& out) const override {
    split_piece(piece, char_matches(piece.text, predicate_), false, behavior_, out);
  }

 private:
  Predicate predicate_;
  SplitBehavior behavior_;
};

template <class Predicate>
std::unique_ptr<PreTokenizer> make_char_split(Predicate predicate, SplitBehavior behavior) {
  return std::make_unique<CharSplit<Predicate>>(predicate, behavior);
}

// tokenizers' Whitespace: the runs that match \w+|[^\w\s]+, with Oniguruma's
// Unicode \w (letters, marks, decimal digits, connector punctuation).
class Whitespace final : public PreTokenizer {
 public:
  explicit Whitespace(const JsonAt& at) : regex_(R"([\p{L}\p{M}\p{Nd}\p{Pc}]+|[^\p{L}\p{M}\p{Nd}\p{Pc}\s]+)", at) {}

 protected:
  void split(const Piece& piece, std::vector<Piece>& out) const override {
    split_piece(piece, regex_.find_all(piece.text), true, SplitBehavior::kRemoved, out);
  }

 private:
  Regex regex_;
};

PrependScheme parse_prepend_scheme(const Json& value, const JsonAt& at) {
  if (const Json* scheme = optional(value, "prepend_scheme")) {
    const std::string name = expect_string(*scheme, at / "prepend_scheme");
    if (name == "always") return PrependScheme::kAlways;
    if (name == "first") return PrependScheme::kFirst;
    if (name == "never") return PrependScheme::kNever;
    (at / "prepend_scheme").fail("expected always, first or never, got '" + name + "'");
  }
  // Files written before prepend_scheme existed say add_prefix_space.
  return bool_or(value, at, "add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
}

std::unique_ptr<PreTokenizer> load_split(const Json& value, const JsonAt& at) {
  const SplitBehavior behavior = parse_split_behavior(required(value, at, "behavior"), at / "behavior");
  const bool invert = bool_or(value, at, "invert", false);
  const JsonAt pattern_at = at / "pattern";
  const Json& pattern = expect_object(required(value, at, "pattern"), pattern_at);
  if (const Json* s = optional(pattern, "String")) {
    return std::make_unique<SplitPattern>(expect_string(*s, pattern_at / "String"), nullptr, behavior, invert);
  }
  if (const Json* r = optional(pattern, "Regex")) {
    return make_regex_split(expect_string(*r, pattern_at / "Regex"), behavior, invert, pattern_at / "Regex");
  }
  pattern_at.fail("expected an object with a String or Regex member");
}

}  // namespace

std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex, const JsonAt& at) {
  return std::make_unique<ByteLevel>(add_prefix_space, use_regex, at);
}

std::unique_ptr<PreTokenizer> make_regex_split(const std::string& pattern, SplitBehavior behavior, bool invert,
                                               const JsonAt& at) {
  return std::make_unique<SplitPattern>("", std::make_unique<Regex>(pattern, at), behavior, invert);
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer_sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) {
  return std::make_unique<PreTokenizerSequence>(std::move(steps));
}

std::unique_ptr<PreTokenizer> load_pre_tokenizer(const Json& value, const JsonAt& at) {
  const std::string type = component_type(value, at);
  if (type == "Sequence") {
    const JsonAt list_at = at / "pretokenizers";
    const Json& list = expect_array(required(value, at, "pretokenizers"), list_at);
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) steps.push_back(load_pre_tokenizer(list[i], list_at[i]));
    return make_pre_tokenizer_sequence(std::move(steps));
  }
  if (type == "ByteLevel") {
    return make_byte_level_pre_tokenizer(bool_or(value, at, "add_prefix_space", true),
                                         bool_or(value, at, "use_regex", true), at);
  }
  if (type == "Split") return load_split(value, at);
  if (type == "Metaspace") {
    const Json* replacement = optional(value, "replacement");
    return std::make_unique<Metaspace>(replacement ? expect_char(*replacement, at / "replacement") : 0x2581,
                                       parse_prepend_scheme(value, at), bool_or(value, at, "split", true));
  }
  if (type == "Digits") {
    const bool individual = bool_or(value, at, "individual_digits", false);
    return make_char_split(is_numeric, individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  }
  if (type == "Whitespace") return std::make_unique<Whitespace>(at);
  if (type == "WhitespaceSplit") return make_char_split(is_whitespace, SplitBehavior::kRemoved);
  if (type == "Punctuation") {
    const Json* behavior = optional(value, "behavior");
    return make_char_split(is_punctuation,
                           behavior ? parse_split_behavior(*behavior, at / "behavior") : SplitBehavior::kIsolated);
  }
  unknown_type(at, type, "Sequence, ByteLevel, Split, Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation");
}

}  // namespace rill::tok
