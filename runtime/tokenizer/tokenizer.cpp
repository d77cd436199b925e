#include "tokenizer/tokenizer.h"


#include <algorithm>
#include <cstdlib>

#include "errors.h"
#include "gguf_reader.h"
#include "io/json_release.h"
#include "io/text_file.h"
#include "platform.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/utf8.h"

namespace rill {

namespace {

using tok::Json;
using tok::JsonAt;
using tok::LoadError;

Json parse_json(const std::string& file, const std::string& text) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for a number too large
    throw LoadError{RILL_ERROR_IO, file + ": not valid JSON: " + e.what()};
  }
}

tok::AddedToken read_added_token(const Json& value, const JsonAt& at, int32_t id) {
  tok::AddedToken token;
  token.content = tok::expect_string(tok::required(value, at, "content"), at / "content");
  if (token.content.empty()) (at / "content").fail("expected a non-empty string");
  token.id = id;
  token.special = tok::bool_or(value, at, "special", false);
  token.single_word = tok::bool_or(value, at, "single_word", false);
  token.lstrip = tok::bool_or(value, at, "lstrip", false);
  token.rstrip = tok::bool_or(value, at, "rstrip", false);
  // tokenizers' default: special tokens match the raw text, others the normalized text.
  token.normalized = tok::bool_or(value, at, "normalized", !token.special);
  return token;
}

}  // namespace

void Tokenizer::load_json(const std::string& file, const std::string& text) {
  Json root = parse_json(file, text);
  const io::JsonRelease release(root);
  const JsonAt at{&file, ""};
  tok::expect_object(root, at);
  if (const Json* truncation = tok::optional(root, "truncation")) {
    (at / "truncation").fail("only null is supported (rill never truncates), got " + truncation->dump());
  }
  if (const Json* padding = tok::optional(root, "padding")) {
    (at / "padding").fail("only null is supported (rill encodes one sequence, unpadded), got " + padding->dump());
  }
  if (const Json* n = tok::optional(root, "normalizer")) normalizer_ = tok::load_normalizer(*n, at / "normalizer");
  if (const Json* p = tok::optional(root, "pre_tokenizer"))
    pre_tokenizer_ = tok::load_pre_tokenizer(*p, at / "pre_tokenizer");
  if (const Json* p = tok::optional(root, "post_processor"))
    post_processor_ = tok::load_post_processor(*p, at / "post_processor");
  if (const Json* d = tok::optional(root, "decoder")) decoder_ = tok::load_decoder(*d, at / "decoder");

  const JsonAt model_at = at / "model";
  const Json& model = tok::required(root, at, "model");
  // Files from before "type" was written hold a BPE model when they have merges.
  const std::string type = tok::optional(model, "type")     ? tok::component_type(model, model_at)
                           : tok::optional(model, "merges") ? "BPE"
                                                            : "";
  if (type != "BPE") tok::unknown_type(model_at, type.empty() ? "(none)" : type, "BPE");
  model_ = std::make_unique<tok::Bpe>(model, model_at);

  if (const Json* list = tok::optional(root, "added_tokens")) {
    const JsonAt list_at = at / "added_tokens";
    tok::expect_array(*list, list_at);
    for (size_t i = 0; i < list->size(); ++i) {
      const JsonAt item_at = list_at[i];
      const auto id = static_cast<int32_t>(
          tok::expect_int(tok::required((*list)[i], item_at, "id"), item_at / "id", 0, INT32_MAX - 1));
      add_added_token(read_added_token((*list)[i], item_at, id));
    }
  }
}

// tokenizers gives an added token that the model's vocabulary already holds
// the vocabulary's id, whatever the file says.
void Tokenizer::add_added_token(tok::AddedToken token) {
  const int32_t model_id = model_->token_to_id(token.content);
  if (model_id >= 0) token.id = model_id;
  added_.add(token, normalizer_.get());
}

// tokenizer_config.json: added tokens tokenizer.json lacks
// (added_tokens_decoder), and, where tokenizer.json has no post-processor,
// add_bos_token / add_eos_token as transformers applies them.
void Tokenizer::apply_tokenizer_config(const std::string& file, const std::string& text) {
  Json root = parse_json(file, text);
  const io::JsonRelease release(root);
  const JsonAt at{&file, ""};
  tok::expect_object(root, at);
  if (const Json* decoder = tok::optional(root, "added_tokens_decoder")) {
    const JsonAt list_at = at / "added_tokens_decoder";
    tok::expect_object(*decoder, list_at);
    for (const auto& [key, value] : decoder->items()) {
      const JsonAt item_at = list_at / key;
      char* end = nullptr;
      const long id = std::strtol(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || id < 0 || id >= INT32_MAX) item_at.fail("expected a token id as the key");
      if (added_.by_id(static_cast<int32_t>(id)) == nullptr) {
        added_.add(read_added_token(value, item_at, static_cast<int32_t>(id)), normalizer_.get());
      }
    }
  }
  if (post_processor_) return;
  std::vector<int32_t> prefix, suffix;
  const auto special_id = [&](const char* flag, const char* name, std::vector<int32_t>& into) {
    if (!tok::bool_or(root, at, flag, false)) return;
    const Json* token = tok::optional(root, name);
    if (token == nullptr) (at / flag).fail(std::string("is true but ") + name + " is not set");
    const JsonAt token_at = at / name;
    const std::string content =
        token->is_object() ? tok::expect_string(tok::required(*token, token_at, "content"), token_at / "content")
                           : tok::expect_string(*token, token_at);
    const int32_t id = token_to_id(content);
    if (id < 0) token_at.fail("'" + content + "' is not a token of the vocabulary");
    into.push_back(id);
  };
  special_id("add_bos_token", "bos_token", prefix);
  special_id("add_eos_token", "eos_token", suffix);
  if (!prefix.empty() || !suffix.empty()) post_processor_ = tok::make_wrapping_processor(prefix, suffix);
}

void Tokenizer::load_gguf(const std::string& path, const gguf::Contents& contents) {
  const std::string file = path + " (its tokenizer metadata)";
  tok::GgufVocab vocab = tok::gguf_vocab(contents, file);
  normalizer_ = std::move(vocab.normalizer);
  pre_tokenizer_ = std::move(vocab.pre_tokenizer);
  model_ = std::move(vocab.model);
  decoder_ = std::move(vocab.decoder);
  for (tok::AddedToken& token : vocab.added) add_added_token(std::move(token));
  if (!vocab.prefix.empty() || !vocab.suffix.empty()) {
    post_processor_ = tok::make_wrapping_processor(vocab.prefix, vocab.suffix);
  }
}

rill_status Tokenizer::load(const std::string& path, const char* function, std::unique_ptr<Tokenizer>& out) {
  const bool folder = platform::is_directory(path);
  if (!folder && path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0) {
    std::unique_ptr<gguf::File> file;
    std::string error;
    if (const rill_status opened = gguf::File::open(path, file, error); opened != RILL_OK) {
      return fail(opened, std::string(function) + ": " + path + ": " + error);
    }
    std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
    try {
      tokenizer->load_gguf(path, file->contents());
    } catch (const LoadError& e) {
      return fail(e.status, std::string(function) + ": " + e.message);
    }
    out = std::move(tokenizer);
    return RILL_OK;
  }
  const std::string json_path = folder ? path + "/tokenizer.json" : path;
  std::string text, error;
  const io::ReadResult read = io::read_text_file(json_path, text, error);
  if (read != io::ReadResult::ok) {
    return fail(RILL_ERROR_IO, std::string(function) + ": cannot read '" + json_path + "'" +
                                   (read == io::ReadResult::failed ? ": " + error
                                    : folder                       ? " (the folder has no tokenizer.json)"
                                                                   : ": no such file"));
  }
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  try {
    tokenizer->load_json(json_path, text);
    std::string config;
    const std::string config_path = folder ? path + "/tokenizer_config.json" : "";
    if (folder) {
      const io::ReadResult config_read = io::read_text_file(config_path, config, error);
      if (config_read == io::ReadResult::failed) throw LoadError{RILL_ERROR_IO, config_path + ": " + error};
      if (config_read == io::ReadResult::ok) tokenizer->apply_tokenizer_config(config_path, config);
    }
  } catch (const LoadError& e) {
    return fail(e.status, std::string(function) + ": " + e.message);
  }
  out = std::move(tokenizer);
  return RILL_OK;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<tok::Piece> pieces{{std::string(text), true, -1}};
  added_.split(pieces, false);
  if (normalizer_) {
    for (tok::Piece& piece : pieces) {
      if (piece.added_token < 0) piece.text = normalizer_->normalize(std::move(piece.text));
    }
  }
  added_.split(pieces, true);
  if (pre_tokenizer_) pre_tokenizer_->apply(pieces);
  std::vector<int32_t> ids;
  for (const tok::Piece& piece : pieces) {
    if (piece.added_token >= 0) {
      ids.push_back(piece.added_token);
    } else {
      model_->encode(piece.text, ids);
    }
  }
  if (post_processor_) post_processor_->process(ids, add_special);
  return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    const tok::AddedToken* added = added_.by_id(id);
    const std::string* token = added ? &added->content : model_->id_to_token(id);
    if (token == nullptr || (skip_special && added_.is_special(*token))) continue;
    tokens.push_back(*token);
  }
  if (!decoder_) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  decoder_->decode_chain(tokens);
  std::string text;
  for (const std::string& t : tokens) text += t;
  return text;
}

int32_t Tokenizer::vocab_size() const { return std::max(model_->size(), added_.size()); }

int32_t Tokenizer::token_to_id(const std::string& token) const {
  if (const tok::AddedToken* added = added_.by_content(token)) return added->id;
  return model_->token_to_id(token);
}

bool Tokenizer::may_change_after(int32_t id) const {
  if (!decoder_ || !decoder_->renders_byte_runs() || added_.by_id(id) != nullptr) return false;
  const std::string* token = model_->id_to_token(id);
  return token != nullptr && tok::byte_fallback_byte(*token) >= 0;
}

// The text of the window minus the context's text is what the new ids add:
// the context lets the decoders see what precedes them (a Metaspace or Strip
// decoder treats the first token specially; bytes of one character may span
// ids). Text that ends in U+FFFD may be a character still incomplete, and a
// run of byte-fallback tokens is valid only as a whole, so both wait for the
// next id. Once text is emitted, the ids after the old context
// become the new context, provided they decode to some text: a context that
// decodes to nothing would let a Strip decoder eat into the next ids.
std::string Tokenizer::StreamDecoder::push(int32_t id) {
  window_.push_back(id);
  const std::string text = tokenizer_->decode(window_, skip_special_);
  static const std::string kReplacement = "\xEF\xBF\xBD";
  const bool incomplete = text.size() >= 3 && text.compare(text.size() - 3, 3, kReplacement) == 0;
  const bool extends_context =
      text.size() > context_text_.size() && text.compare(0, context_text_.size(), context_text_) == 0;
  if (!extends_context || incomplete || tokenizer_->may_change_after(id)) return {};
  std::string added = text.substr(context_text_.size());
  std::vector<int32_t> fresh(window_.begin() + static_cast<std::ptrdiff_t>(context_ids_), window_.end());
  std::string fresh_text = tokenizer_->decode(fresh, skip_special_);
  if (!fresh_text.empty()) {
    window_ = std::move(fresh);
    context_text_ = std::move(fresh_text);
  } else {
    context_text_ = text;
  }
  context_ids_ = window_.size();
  return added;
}

std::string Tokenizer::StreamDecoder::finish() {
  const std::string text = tokenizer_->decode(window_, skip_special_);
  std::string rest;
  if (text.size() > context_text_.size() && text.compare(0, context_text_.size(), context_text_) == 0) {
    rest = text.substr(context_text_.size());
  }
  window_.clear();
  context_ids_ = 0;
  context_text_.clear();
  return rest;
}

}  // namespace rill
