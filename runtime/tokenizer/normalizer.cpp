#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace rill::tok {

std::string replace_all(const std::string& text, const std::string& pattern, const std::string& content) {
  std::string out;
  size_t start = 0;
  for (size_t at = text.find(pattern); at != std::string::npos; at = text.find(pattern, start)) {
    out.append(text, start, at - start);
    out += content;
    start = at + pattern.size();
  }
  out.append(text, start, std::string::npos);
  return out;
}

namespace {

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string normalize(std::string text) const override {
    for (const auto& step : steps_) text = step->normalize(std::move(text));
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

// Unicode normalization forms through utf8proc, which keeps the Unicode
// tables current; the text's length is passed so that U+0000 is kept.
class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(utf8proc_option_t options) : options_(options) {}
  std::string normalize(std::string text) const override {
    if (text.empty()) return text;
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                     &out, static_cast<utf8proc_option_t>(options_ | UTF8PROC_STABLE));
    if (n < 0) {
      if (n == UTF8PROC_ERROR_NOMEM) throw std::bad_alloc();
      throw std::runtime_error(std::string("utf8proc: ") + utf8proc_errmsg(n));
    }
    std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
    return result;
  }

 private:
  utf8proc_option_t options_;
};

// tokenizers lowercases character by character (Rust's char::to_lowercase):
// no context rules, so a final capital sigma becomes σ, and U+0130 becomes
// "i" and a combining dot, its one lowercase mapping of two characters.
class Lowercase final : public Normalizer {
 public:
  std::string normalize(std::string text) const override {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      const uint32_t cp = next_code_point(text, i);
      if (cp == 0x130) {
        out += "i\xCC\x87";
      } else {
        append_utf8(out, static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
      }
    }
    return out;
  }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string text) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      for (size_t i = 0; i < text.size();) {
        if (!is_whitespace(next_code_point(text, i))) break;
        begin = i;
      }
    }
    if (right_) {
      size_t last_text_end = begin;
      for (size_t i = begin; i < text.size();) {
        if (!is_whitespace(next_code_point(text, i))) last_text_end = i;
      }
      end = last_text_end;
    }
    return text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string text) const override { return text.empty() ? text : prefix_ + text; }

 private:
  std::string prefix_;
};

class ReplaceString final : public Normalizer {
 public:
  ReplaceString(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string normalize(std::string text) const override {
    return pattern_.empty() ? text : replace_all(text, pattern_, content_);
  }

 private:
  std::string pattern_, content_;
};

class ReplaceRegex final : public Normalizer {
 public:
  ReplaceRegex(const std::string& pattern, const JsonAt& at, std::string content)
      : regex_(pattern, at), content_(std::move(content)) {}
  std::string normalize(std::string text) const override {
    std::string out;
    size_t start = 0;
    for (const auto& [begin, end] : regex_.find_all(text)) {
      out.append(text, start, begin - start);
      out += content_;
      start = end;
    }
    out.append(text, start, std::string::npos);
    return out;
  }

 private:
  Regex regex_;
  std::string content_;
};

}  // namespace

std::unique_ptr<Normalizer> make_nfc_normalizer() { return std::make_unique<UnicodeForm>(UTF8PROC_COMPOSE); }

std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix) {
  return std::make_unique<Prepend>(std::move(prefix));
}

std::unique_ptr<Normalizer> make_replace_normalizer(std::string pattern, std::string content) {
  return std::make_unique<ReplaceString>(std::move(pattern), std::move(content));
}

std::unique_ptr<Normalizer> make_normalizer_sequence(std::vector<std::unique_ptr<Normalizer>> steps) {
  return std::make_unique<Sequence>(std::move(steps));
}

std::unique_ptr<Normalizer> load_normalizer(const Json& value, const JsonAt& at) {
  const std::string type = component_type(value, at);
  if (type == "Sequence") {
    const JsonAt list_at = at / "normalizers";
    const Json& list = expect_array(required(value, at, "normalizers"), list_at);
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) steps.push_back(load_normalizer(list[i], list_at[i]));
    return make_normalizer_sequence(std::move(steps));
  }
  if (type == "NFC") return make_nfc_normalizer();
  if (type == "NFD") return std::make_unique<UnicodeForm>(UTF8PROC_DECOMPOSE);
  if (type == "NFKC")
    return std::make_unique<UnicodeForm>(static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  if (type == "NFKD")
    return std::make_unique<UnicodeForm>(static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT));
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Strip") {
    return std::make_unique<Strip>(bool_or(value, at, "strip_left", true), bool_or(value, at, "strip_right", true));
  }
  if (type == "Prepend")
    return make_prepend_normalizer(expect_string(required(value, at, "prepend"), at / "prepend"));
  if (type == "Replace") {
    const JsonAt pattern_at = at / "pattern";
    const Json& pattern = expect_object(required(value, at, "pattern"), pattern_at);
    std::string content = expect_string(required(value, at, "content"), at / "content");
    if (const Json* s = optional(pattern, "String")) {
      return make_replace_normalizer(expect_string(*s, pattern_at / "String"), std::move(content));
    }
    if (const Json* r = optional(pattern, "Regex")) {
      return std::make_unique<ReplaceRegex>(expect_string(*r, pattern_at / "Regex"), pattern_at / "Regex",
                                            std::move(content));
    }
    pattern_at.fail("expected an object with a String or Regex member");
  }
  unknown_type(at, type, "Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace");
}

}  // namespace rill::tok
