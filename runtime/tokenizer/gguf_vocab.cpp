#include "tokenizer/gguf_vocab.h"

#include <map>

#include "tokenizer/json_reader.h"

namespace rill::tok {
namespace {

// llama.cpp's token types (tokenizer.ggml.token_type).
constexpr int64_t kTypeControl = 3;
constexpr int64_t kTypeUserDefined = 4;

// The pre-tokenizers of the tokenizer.json files whose GGUF conversion names
// them (tokenizer.ggml.pre), as those files write them.
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Json byte_level(bool use_regex) {
  return Json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

Json split_then_bytes(const char* pattern) {
  return Json{{"type", "Sequence"},
              {"pretokenizers",
               Json::array({Json{{"type", "Split"},
                                 {"pattern", Json{{"Regex", pattern}}},
                                 {"behavior", "Isolated"},
                                 {"invert", false}},
                            byte_level(false)})}};
}

class Keys {
 public:
  Keys(const gguf::Contents& contents, const std::string& file) : contents_(contents), file_(file) {}

  [[noreturn]] void fail(rill_status status, const std::string& key, const std::string& what) const {
    throw LoadError{status, file_ + ": metadata '" + key + "': " + what};
  }

  const gguf::Value* get(const std::string& key) const { return contents_.find(key); }

  std::string string(const std::string& key, const char* fallback) const {
    const gguf::Value* v = get(key);
    std::string_view s;
    if (v == nullptr) {
      if (fallback == nullptr) fail(RILL_ERROR_CONFIG, key, "required, but absent");
      return fallback;
    }
    if (!v->as_string(s)) fail(RILL_ERROR_CONFIG, key, std::string("expected a string, got a ") +
                                                          gguf::value_type_name(v->type()));
    return std::string(s);
  }

  // An array of element type, or nullptr when absent and not required.
  const gguf::Value* array(const std::string& key, gguf::ValueType element, bool required) const {
    const gguf::Value* v = get(key);
    if (v == nullptr) {
      if (required) fail(RILL_ERROR_CONFIG, key, "required, but absent");
      return nullptr;
    }
    if (v->type() != gguf::ValueType::ARRAY || (element == gguf::ValueType::STRING) !=
                                                   (v->element_type() == gguf::ValueType::STRING)) {
      fail(RILL_ERROR_CONFIG, key, std::string("expected an array of ") + gguf::value_type_name(element) + "s");
    }
    return v;
  }

  bool flag(const std::string& key) const {
    const gguf::Value* v = get(key);
    bool value = false;
    if (v != nullptr && !v->as_bool(value)) fail(RILL_ERROR_CONFIG, key, "expected a bool");
    return value;
  }

  // A token id below vocab, or -1 when absent.
  int64_t id(const std::string& key, uint64_t vocab) const {
    const gguf::Value* v = get(key);
    int64_t value = -1;
    if (v == nullptr) return -1;
    if (!v->as_i64(value) || value < 0 || static_cast<uint64_t>(value) >= vocab) {
      fail(RILL_ERROR_CONFIG, key, "expected a token id below " + std::to_string(vocab));
    }
    return value;
  }

 private:
  const gguf::Contents& contents_;
  const std::string& file_;
};

}  // namespace

GgufVocab gguf_vocab(const gguf::Contents& contents, const std::string& file) {
  const Keys k(contents, file);
  const std::string kind = k.string("tokenizer.ggml.model", nullptr);
  if (kind != "gpt2") {
    k.fail(RILL_ERROR_UNSUPPORTED, "tokenizer.ggml.model",
           "\"" + kind + "\" is not supported; rill reads gpt2-style byte-level BPE vocabularies (\"gpt2\")");
  }
  // Files from before tokenizer.ggml.pre existed hold GPT-2's.
  const std::string pre = k.string("tokenizer.ggml.pre", "gpt-2");
  Json root = Json::object();
  root["normalizer"] = nullptr;
  root["decoder"] = Json{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
                         {"use_regex", true}};
  bool ignore_merges = false;
  if (pre == "gpt-2") {
    root["pre_tokenizer"] = byte_level(true);
  } else if (pre == "llama-bpe") {
    root["pre_tokenizer"] = split_then_bytes(kLlama3Pattern);
    ignore_merges = true;
  } else if (pre == "qwen2") {
    root["normalizer"] = Json{{"type", "NFC"}};
    root["pre_tokenizer"] = split_then_bytes(kQwen2Pattern);
  } else {
    k.fail(RILL_ERROR_UNSUPPORTED, "tokenizer.ggml.pre",
           "\"" + pre + "\" is not supported; supported: gpt-2, llama-bpe, qwen2 (llama.cpp's \"default\" split "
           "has no tokenizer.json counterpart)");
  }

  const gguf::Value* tokens = k.array("tokenizer.ggml.tokens", gguf::ValueType::STRING, true);
  const gguf::Value* types = k.array("tokenizer.ggml.token_type", gguf::ValueType::I32, false);
  const gguf::Value* merges = k.array("tokenizer.ggml.merges", gguf::ValueType::STRING, true);
  if (tokens->size() == 0 || tokens->size() >= static_cast<uint64_t>(INT32_MAX)) {
    k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.tokens", "expected 1 to 2^31 - 2 tokens");
  }
  if (types != nullptr && types->size() != tokens->size()) {
    k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.token_type",
           "holds " + std::to_string(types->size()) + " types for " + std::to_string(tokens->size()) + " tokens");
  }
  // Control and user-defined tokens are added tokens, as in the tokenizer.json
  // the converter read them from; the others form the BPE vocabulary.
  Json vocab = Json::object();
  Json added = Json::array();
  for (uint64_t i = 0; i < tokens->size(); ++i) {
    std::string_view token;
    tokens->element_string(i, token);
    int64_t type = 1;
    if (types != nullptr && !types->element_i64(i, type)) {
      k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.token_type", "expected integers");
    }
    const auto id = static_cast<int64_t>(i);
    if (type == kTypeControl || type == kTypeUserDefined) {
      added.push_back(Json{{"id", id},
                           {"content", token},
                           {"single_word", false},
                           {"lstrip", false},
                           {"rstrip", false},
                           {"normalized", type == kTypeUserDefined},
                           {"special", type == kTypeControl}});
      continue;
    }
    const std::string text(token);
    if (vocab.contains(text)) {
      k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.tokens", "token " + std::to_string(i) + " ('" + text +
                                                             "') appears twice");
    }
    vocab[text] = id;
  }
  Json merge_list = Json::array();
  for (uint64_t i = 0; i < merges->size(); ++i) {
    std::string_view merge;
    merges->element_string(i, merge);
    merge_list.push_back(merge);
  }
  root["added_tokens"] = std::move(added);
  root["model"] = Json{{"type", "BPE"},          {"dropout", nullptr}, {"unk_token", nullptr},
                       {"fuse_unk", false},      {"byte_fallback", false}, {"ignore_merges", ignore_merges},
                       {"vocab", std::move(vocab)}, {"merges", std::move(merge_list)}};

  GgufVocab out;
  if (k.flag("tokenizer.ggml.add_bos_token")) {
    const int64_t bos = k.id("tokenizer.ggml.bos_token_id", tokens->size());
    if (bos < 0) k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.add_bos_token", "is true but bos_token_id is not set");
    out.prefix.push_back(static_cast<int32_t>(bos));
  }
  if (k.flag("tokenizer.ggml.add_eos_token")) {
    const int64_t eos = k.id("tokenizer.ggml.eos_token_id", tokens->size());
    if (eos < 0) k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.add_eos_token", "is true but eos_token_id is not set");
    out.suffix.push_back(static_cast<int32_t>(eos));
  }
  try {
    out.json = root.dump();
  } catch (const Json::type_error&) {
    throw LoadError{RILL_ERROR_CONFIG, file + ": the tokenizer metadata holds a string that is not valid UTF-8"};
  }
  return out;
}

}  // namespace rill::tok
