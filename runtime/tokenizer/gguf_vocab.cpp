#include "tokenizer/gguf_vocab.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf_names.h"
#include "tokenizer/json_reader.h"
#include "tokenizer/utf8.h"

namespace rill::tok {
namespace {

// llama.cpp's token types (tokenizer.ggml.token_type).
constexpr int64_t kTypeNormal = 1;
constexpr int64_t kTypeUnknown = 2;
constexpr int64_t kTypeControl = 3;
constexpr int64_t kTypeUserDefined = 4;


class Keys {
 public:
  Keys(const gguf::Contents& contents, const std::string& file) : contents_(contents), file_(file) {}

  [[noreturn]] void fail(rill_status status, const std::string& key, const std::string& what) const {
    throw LoadError{status, file_ + ": metadata '" + key + "': " + what};
  }

  const std::string& file() const { return file_; }

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

  bool flag(const std::string& key, bool fallback) const {
    const gguf::Value* v = get(key);
    bool value = fallback;
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

int64_t token_type(const Keys& k, const gguf::Value* types, uint64_t i) {
  int64_t type = kTypeNormal;
  if (types != nullptr && !types->element_i64(i, type)) {
    k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.token_type", "expected integers");
  }
  return type;
}

std::string token_at(const gguf::Value* tokens, uint64_t i) {
  std::string_view token;
  tokens->element_string(i, token);
  return std::string(token);
}

void add_added_token(const Keys& k, GgufVocab& v, const std::string& token, uint64_t id, bool normalized, bool special) {
  if (token.empty()) k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.tokens", "token " + std::to_string(id) + " is empty");
  AddedToken added;
  added.content = token;
  added.id = static_cast<int32_t>(id);
  added.normalized = normalized;
  added.special = special;
  v.added.push_back(std::move(added));
}

void add_to_vocab(const Keys& k, Bpe& model, const std::string& token, uint64_t id) {
  if (const std::string error = model.add_token(token, static_cast<int32_t>(id)); !error.empty()) {
    k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.tokens", error);
  }
}

// GPT-2's byte-level pre-tokenizer after a Split at pattern's matches, as
// Llama 3's and Qwen2's tokenizer.json files write it.
std::unique_ptr<PreTokenizer> split_then_bytes(const char* pattern, const JsonAt& at) {
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  steps.push_back(make_regex_split(pattern, SplitBehavior::kIsolated, false, at));
  steps.push_back(make_byte_level_pre_tokenizer(false, false, at));
  return make_pre_tokenizer_sequence(std::move(steps));
}

// Byte-level BPE (tokenizer.ggml.model "gpt2"): the merges are in the file;
// tokenizer.ggml.pre names the pre-tokenizer.
void byte_level_model(const Keys& k, const gguf::Value* tokens, const gguf::Value* types, GgufVocab& v) {
  // Files from before tokenizer.ggml.pre existed hold GPT-2's.
  const std::string pre = k.string("tokenizer.ggml.pre", "gpt-2");
  const JsonAt pre_at{&k.file(), "tokenizer.ggml.pre"};
  Bpe::Options options;
  if (pre == "gpt-2") {
    v.pre_tokenizer = make_byte_level_pre_tokenizer(false, true, pre_at);
  } else if (pre == "llama-bpe") {
    v.pre_tokenizer = split_then_bytes(gguf::kLlamaBpePattern, pre_at);
    options.ignore_merges = true;
  } else if (pre == "qwen2") {
    v.normalizer = make_nfc_normalizer();
    v.pre_tokenizer = split_then_bytes(gguf::kQwen2Pattern, pre_at);
  } else {
    k.fail(RILL_ERROR_UNSUPPORTED, "tokenizer.ggml.pre",
           "\"" + pre + "\" is not supported; supported: gpt-2, llama-bpe, qwen2 (llama.cpp's \"default\" split "
           "has no tokenizer.json counterpart)");
  }
  v.decoder = make_byte_level_decoder();
  const gguf::Value* merges = k.array("tokenizer.ggml.merges", gguf::ValueType::STRING, true);
  // Control and user-defined tokens are added tokens, as in the tokenizer.json
  // the converter read them from; the others form the BPE vocabulary.
  v.model = std::make_unique<Bpe>();
  for (uint64_t i = 0; i < tokens->size(); ++i) {
    const std::string token = token_at(tokens, i);
    const int64_t type = token_type(k, types, i);
    if (type == kTypeControl || type == kTypeUserDefined) {
      add_added_token(k, v, token, i, type == kTypeUserDefined, type == kTypeControl);
    } else {
      add_to_vocab(k, *v.model, token, i);
    }
  }
  for (uint64_t i = 0; i < merges->size(); ++i) {
    std::string_view merge;
    merges->element_string(i, merge);
    const size_t space = merge.find(' ');
    const std::string error = space == std::string_view::npos
                                  ? "expected \"left right\", got '" + std::string(merge) + "'"
                                  : v.model->add_merge(merge.substr(0, space), merge.substr(space + 1));
    if (!error.empty()) k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.merges", "merge " + std::to_string(i) + ": " + error);
  }
  v.model->finish(options);
}

size_t code_points(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) next_code_point(s, i);
  return n;
}

// A SentencePiece BPE model keeps scores, not merges. As transformers'
// converter does (generate_merges): every split of a piece into two pieces of
// the vocabulary is a merge, ranked by the piece's score (highest first), then
// by the left and right parts' lengths in code points (longest first); ties
// keep the order of the pieces' ids and, within one piece, of the parts' ids.
void merges_from_scores(const std::vector<std::string>& pieces, const std::vector<double>& scores,
                        const std::unordered_map<std::string_view, int64_t>& ids, Bpe& model) {
  struct Merge {
    std::string_view left, right;
    double score;
    size_t left_chars, right_chars;
    int64_t left_id, right_id;
  };
  std::vector<Merge> merges;
  std::vector<Merge> local;
  for (size_t p = 0; p < pieces.size(); ++p) {
    const std::string_view piece = pieces[p];
    local.clear();
    size_t at = 0;
    next_code_point(piece, at);  // a split leaves at least one code point on each side
    for (size_t left_chars = 1; at < piece.size(); ++left_chars) {
      const auto left = ids.find(piece.substr(0, at));
      const auto right = ids.find(piece.substr(at));
      if (left != ids.end() && right != ids.end()) {
        local.push_back({left->first, right->first, scores[p], left_chars, code_points(piece.substr(at)),
                         left->second, right->second});
      }
      next_code_point(piece, at);
    }
    std::stable_sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return a.left_id != b.left_id ? a.left_id < b.left_id : a.right_id < b.right_id;
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.left_chars != b.left_chars) return a.left_chars > b.left_chars;
    return a.right_chars > b.right_chars;
  });
  // Both parts and the piece are in the vocabulary, so no merge is refused.
  for (const Merge& m : merges) model.add_merge(m.left, m.right);
}

// SentencePiece BPE (tokenizer.ggml.model "llama": Llama 2, Mistral, Gemma) as
// transformers' LlamaConverter and GemmaConvert write it: every piece in the
// BPE vocabulary, unknown and control pieces also special added tokens and
// user-defined pieces plain added tokens; spaces become "▁", with one
// prepended (and stripped again on decode) under add_space_prefix; byte
// fallback to <0xNN> pieces.
void sentencepiece_model(const Keys& k, const gguf::Value* tokens, const gguf::Value* types, GgufVocab& v) {
  const gguf::Value* score_values = k.array("tokenizer.ggml.scores", gguf::ValueType::F32, true);
  if (score_values->size() != tokens->size()) {
    k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.scores",
           "holds " + std::to_string(score_values->size()) + " scores for " + std::to_string(tokens->size()) +
               " tokens");
  }
  const bool add_space_prefix = k.flag("tokenizer.ggml.add_space_prefix", true);
  // Gemma's converter calls the tab's byte piece "\t" and makes its turn markers special.
  const bool gemma = k.string("general.architecture", "").rfind("gemma", 0) == 0;
  std::vector<std::string> pieces(tokens->size());
  std::vector<double> scores(tokens->size());
  v.model = std::make_unique<Bpe>();
  Bpe::Options options;
  options.fuse_unk = true;
  options.byte_fallback = true;
  for (uint64_t i = 0; i < tokens->size(); ++i) {
    const std::string token = token_at(tokens, i);
    if (token.size() > gguf::kMaxSentencePieceBytes) {
      k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.tokens",
             "token " + std::to_string(i) + " has " + std::to_string(token.size()) + " bytes; at most " +
                 std::to_string(gguf::kMaxSentencePieceBytes) + " are supported");
    }
    if (!score_values->element_f64(i, scores[i])) k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.scores", "expected numbers");
    const int64_t type = token_type(k, types, i);
    if (type == kTypeUnknown || type == kTypeControl) {
      add_added_token(k, v, token, i, false, true);
      if (type == kTypeUnknown && options.unk_id < 0) options.unk_id = static_cast<int32_t>(i);
    } else if (type == kTypeUserDefined) {
      const bool turn_marker = gemma && (token == "<start_of_turn>" || token == "<end_of_turn>");
      add_added_token(k, v, token, i, false, turn_marker);
    }
    pieces[i] = gemma && token == "<0x09>" ? "\t" : token;
    add_to_vocab(k, *v.model, pieces[i], i);
  }
  if (const int64_t unk = k.id("tokenizer.ggml.unknown_token_id", tokens->size()); unk >= 0) {
    options.unk_id = static_cast<int32_t>(unk);
  }
  std::unordered_map<std::string_view, int64_t> ids;  // the pieces differ: add_to_vocab checked
  for (size_t i = 0; i < pieces.size(); ++i) ids.emplace(pieces[i], static_cast<int64_t>(i));
  merges_from_scores(pieces, scores, ids, *v.model);
  v.model->finish(options);

  // Spaces become "\u2581", with one prepended under add_space_prefix.
  std::unique_ptr<Normalizer> to_metaspace = make_replace_normalizer(" ", "\u2581");
  if (add_space_prefix) {
    std::vector<std::unique_ptr<Normalizer>> steps;
    steps.push_back(make_prepend_normalizer("\u2581"));
    steps.push_back(std::move(to_metaspace));
    v.normalizer = make_normalizer_sequence(std::move(steps));
  } else {
    v.normalizer = std::move(to_metaspace);
  }
  std::vector<std::unique_ptr<Decoder>> decoders;
  decoders.push_back(make_replace_decoder("\u2581", " "));
  decoders.push_back(make_byte_fallback_decoder());
  decoders.push_back(make_fuse_decoder());
  if (add_space_prefix) decoders.push_back(make_strip_decoder(' ', 1, 0));
  v.decoder = make_decoder_sequence(std::move(decoders));
}

}  // namespace

GgufVocab gguf_vocab(const gguf::Contents& contents, const std::string& file) {
  const Keys k(contents, file);
  const std::string kind = k.string("tokenizer.ggml.model", nullptr);
  if (kind != "gpt2" && kind != "llama") {
    k.fail(RILL_ERROR_UNSUPPORTED, "tokenizer.ggml.model",
           "\"" + kind + "\" is not supported; rill reads byte-level BPE (\"gpt2\") and SentencePiece BPE "
           "(\"llama\") vocabularies");
  }
  const bool sentencepiece = kind == "llama";
  const gguf::Value* tokens = k.array("tokenizer.ggml.tokens", gguf::ValueType::STRING, true);
  const gguf::Value* types = k.array("tokenizer.ggml.token_type", gguf::ValueType::I32, false);
  if (tokens->size() == 0 || tokens->size() >= static_cast<uint64_t>(INT32_MAX)) {
    k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.tokens", "expected 1 to 2^31 - 2 tokens");
  }
  if (types != nullptr && types->size() != tokens->size()) {
    k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.token_type",
           "holds " + std::to_string(types->size()) + " types for " + std::to_string(tokens->size()) + " tokens");
  }
  // Every piece is checked here, so the components see only valid UTF-8.
  for (uint64_t i = 0; i < tokens->size(); ++i) {
    std::string_view token;
    tokens->element_string(i, token);
    if (find_invalid_utf8(token) != token.size()) {
      k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.tokens", "token " + std::to_string(i) + " is not valid UTF-8");
    }
  }
  GgufVocab out;
  if (sentencepiece) {
    sentencepiece_model(k, tokens, types, out);
  } else {
    byte_level_model(k, tokens, types, out);
  }
  // llama.cpp adds BOS by default to SentencePiece vocabularies (files from
  // before tokenizer.ggml.add_bos_token existed rely on it).
  if (k.flag("tokenizer.ggml.add_bos_token", sentencepiece)) {
    const int64_t bos = k.id("tokenizer.ggml.bos_token_id", tokens->size());
    if (bos < 0) k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.add_bos_token", "is true but bos_token_id is not set");
    out.prefix.push_back(static_cast<int32_t>(bos));
  }
  if (k.flag("tokenizer.ggml.add_eos_token", false)) {
    const int64_t eos = k.id("tokenizer.ggml.eos_token_id", tokens->size());
    if (eos < 0) k.fail(RILL_ERROR_CONFIG, "tokenizer.ggml.add_eos_token", "is true but eos_token_id is not set");
    out.suffix.push_back(static_cast<int32_t>(eos));
  }
  return out;
}

}  // namespace rill::tok
