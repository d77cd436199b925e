#include "tokenizer/decoder.h"

#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace rill::tok {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

int byte_fallback_byte(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  const int hi = hex_digit(token[3]), lo = hex_digit(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

namespace {

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }
  bool renders_byte_runs() const override {
    for (const auto& step : steps_) {
      if (step->renders_byte_runs()) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

// Every token's characters back to bytes (a token with a character outside
// the byte alphabet, an added token say, keeps its own bytes), all joined and
// read as UTF-8 with invalid sequences replaced.
class ByteLevel final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      std::string mapped;
      bool all_mapped = true;
      for (size_t i = 0; i < token.size() && all_mapped;) {
        const int b = byte_level_byte(next_code_point(token, i));
        if (b < 0) {
          all_mapped = false;
        } else {
          mapped += static_cast<char>(b);
        }
      }
      bytes += all_mapped ? mapped : token;
    }
    tokens.assign(1, from_utf8_lossy(bytes));
  }
};

// Replacement characters back to spaces; in the first token they are
// dropped unless prepend_scheme is "never" (all of them, as tokenizers does).
class Metaspace final : public Decoder {
 public:
  Metaspace(uint32_t replacement, bool drop_in_first) : drop_in_first_(drop_in_first) {
    append_utf8(replacement_, replacement);
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replace_all(tokens[i], replacement_, i == 0 && drop_in_first_ ? "" : " ");
    }
  }

 private:
  std::string replacement_;
  bool drop_in_first_;
};

class Replace final : public Decoder {
 public:
  Replace(std::string pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (pattern_.empty()) return;
    for (std::string& token : tokens) token = replace_all(token, pattern_, content_);
  }

 private:
  std::string pattern_, content_;
};

// Runs of <0xNN> tokens become the text of their bytes, or one U+FFFD per
// byte when the run is not valid UTF-8.
class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t byte_count = 0;
    const auto flush = [&] {
      if (byte_count == 0) return;
      if (find_invalid_utf8(bytes) == bytes.size()) {
        out.push_back(bytes);
      } else {
        for (size_t k = 0; k < byte_count; ++k) out.emplace_back("\xEF\xBF\xBD");
      }
      bytes.clear();
      byte_count = 0;
    };
    for (std::string& token : tokens) {
      const int b = byte_fallback_byte(token);
      if (b >= 0) {
        bytes += static_cast<char>(b);
        ++byte_count;
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    tokens = std::move(out);
  }
  bool renders_byte_runs() const override { return true; }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    tokens.assign(1, std::move(joined));
  }
};

// Up to start leading and stop trailing copies of one character off every token.
class Strip final : public Decoder {
 public:
  Strip(uint32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      std::vector<std::pair<size_t, uint32_t>> chars;  // byte offset, code point
      for (size_t i = 0; i < token.size();) {
        const size_t at = i;
        chars.emplace_back(at, next_code_point(token, i));
      }
      size_t first = 0, last = chars.size();
      while (first < chars.size() && first < start_ && chars[first].second == content_) ++first;
      while (last > first && chars.size() - last < stop_ && chars[last - 1].second == content_) --last;
      const size_t begin = first < chars.size() ? chars[first].first : token.size();
      const size_t end = last < chars.size() ? chars[last].first : token.size();
      token = token.substr(begin, end - begin);
    }
  }

 private:
  uint32_t content_;
  size_t start_, stop_;
};

}  // namespace

std::unique_ptr<Decoder> make_byte_level_decoder() { return std::make_unique<ByteLevel>(); }

std::unique_ptr<Decoder> make_replace_decoder(std::string pattern, std::string content) {
  return std::make_unique<Replace>(std::move(pattern), std::move(content));
}

std::unique_ptr<Decoder> make_byte_fallback_decoder() { return std::make_unique<ByteFallback>(); }

std::unique_ptr<Decoder> make_fuse_decoder() { return std::make_unique<Fuse>(); }

std::unique_ptr<Decoder> make_strip_decoder(uint32_t content, size_t start, size_t stop) {
  return std::make_unique<Strip>(content, start, stop);
}

std::unique_ptr<Decoder> make_decoder_sequence(std::vector<std::unique_ptr<Decoder>> steps) {
  return std::make_unique<Sequence>(std::move(steps));
}

std::unique_ptr<Decoder> load_decoder(const Json& value, const JsonAt& at) {
  const std::string type = component_type(value, at);
  if (type == "Sequence") {
    const JsonAt list_at = at / "decoders";
    const Json& list = expect_array(required(value, at, "decoders"), list_at);
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i) steps.push_back(load_decoder(list[i], list_at[i]));
    return make_decoder_sequence(std::move(steps));
  }
  if (type == "ByteLevel") return make_byte_level_decoder();
  if (type == "Metaspace") {
    const Json* replacement = optional(value, "replacement");
    bool drop_in_first = bool_or(value, at, "add_prefix_space", true);
    if (const Json* scheme = optional(value, "prepend_scheme")) {
      const std::string name = expect_string(*scheme, at / "prepend_scheme");
      if (name != "always" && name != "first" && name != "never") {
        (at / "prepend_scheme").fail("expected always, first or never, got '" + name + "'");
      }
      drop_in_first = name != "never";
    }
    return std::make_unique<Metaspace>(replacement ? expect_char(*replacement, at / "replacement") : 0x2581,
                                       drop_in_first);
  }
  if (type == "Replace") {
    const JsonAt pattern_at = at / "pattern";
    const Json& pattern = expect_object(required(value, at, "pattern"), pattern_at);
    const Json* literal = optional(pattern, "String");
    if (literal == nullptr) pattern_at.fail("expected an object with a String member (a Regex is not supported here)");
    return make_replace_decoder(expect_string(*literal, pattern_at / "String"),
                                expect_string(required(value, at, "content"), at / "content"));
  }
  if (type == "ByteFallback") return make_byte_fallback_decoder();
  if (type == "Fuse") return make_fuse_decoder();
  if (type == "Strip") {
    return make_strip_decoder(
        expect_char(required(value, at, "content"), at / "content"),
        static_cast<size_t>(expect_int(required(value, at, "start"), at / "start", 0, INT32_MAX)),
        static_cast<size_t>(expect_int(required(value, at, "stop"), at / "stop", 0, INT32_MAX)));
  }
  unknown_type(at, type, "Sequence, ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip");
}

}  // namespace rill::tok
