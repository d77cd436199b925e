// tokenizer.json -> tokenizer.ggml.* for `rill quantize` from a Hugging Face
// folder, as llama.cpp's converter writes a vocabulary: tokens by id, special
// added tokens as CONTROL and other added tokens as USER_DEFINED, and the
// BOS/EOS tokens the post-processor adds. A byte-level BPE (model "gpt2") gets
// its merges as "left right" and tokenizer.ggml.pre naming the pre-tokenizer;
// a SentencePiece BPE (model "llama": byte fallback, spaces as U+2581, as
// transformers' Llama and Gemma converters write it) gets scores that rank
// each piece as its merges do, and add_space_prefix. A tokenizer whose
// behaviour these keys cannot carry is refused by name.
#include <nlohmann/json.hpp>

#include <cctype>
#include <map>
#include <tuple>
#include <unordered_map>

#include "gguf_names.h"
#include "quantize_source.h"

namespace rill_cli {
namespace {

using nlohmann::json;

// llama.cpp's token types.
constexpr int32_t kTypeNormal = 1, kTypeUnknown = 2, kTypeControl = 3, kTypeUserDefined = 4, kTypeUnused = 5,
                  kTypeByte = 6;

struct Refusal {
  std::string message;
};

constexpr const char* kMetaspace = "\u2581";

[[noreturn]] void refuse(const std::string& where, const std::string& text) {
  throw Refusal{"'" + where + "': " + text};
}

const json& member(const json& j, const char* key, const std::string& where) {
  const auto v = j.is_object() ? j.find(key) : j.end();
  if (v == j.end()) refuse(where, std::string("expected a member '") + key + "'");
  return *v;
}

bool is_type(const json& j, const char* type) { return j.is_object() && j.value("type", "") == type; }

// A ByteLevel pre-tokenizer step with the given use_regex and no prefix space.
bool byte_level(const json& j, bool use_regex) {
  return is_type(j, "ByteLevel") && !j.value("add_prefix_space", false) && j.value("use_regex", true) == use_regex;
}

// Split(pattern, Isolated) then ByteLevel without its own regex.
bool split_then_bytes(const json& j, const char* pattern) {
  if (!is_type(j, "Sequence") || !j.contains("pretokenizers") || j["pretokenizers"].size() != 2) return false;
  const json& split = j["pretokenizers"][0];
  return is_type(split, "Split") && split.contains("pattern") && split["pattern"].value("Regex", "") == pattern &&
         split.value("behavior", "") == "Isolated" && !split.value("invert", true) &&
         byte_level(j["pretokenizers"][1], false);
}

// tokenizer.ggml.pre for the file's normalizer and pre-tokenizer.
std::string pre_tokenizer_name(const json& t, bool ignore_merges) {
  const json& normalizer = member(t, "normalizer", "normalizer");
  const json& pre = member(t, "pre_tokenizer", "pre_tokenizer");
  const bool nfc = is_type(normalizer, "NFC");
  if (!normalizer.is_null() && !nfc) refuse("normalizer", "expected null or NFC, got " + normalizer.dump());
  if (!nfc && !ignore_merges && byte_level(pre, true)) return "gpt-2";
  if (!nfc && ignore_merges && split_then_bytes(pre, rill::gguf::kLlamaBpePattern)) return "llama-bpe";
  if (nfc && !ignore_merges && split_then_bytes(pre, rill::gguf::kQwen2Pattern)) return "qwen2";
  refuse("pre_tokenizer", "not one of the byte-level pre-tokenizers GGUF names (GPT-2's ByteLevel; Llama 3's or "
                          "Qwen2's split, with model.ignore_merges true for Llama 3's and an NFC normalizer for "
                          "Qwen2's)");
}

// The ids of the special tokens post_processor puts before and after the text.
void added_ends(const json& processor, std::vector<int64_t>& before, std::vector<int64_t>& after) {
  if (processor.is_null() || is_type(processor, "ByteLevel")) return;  // ByteLevel moves only offsets
  if (is_type(processor, "Sequence")) {
    for (const json& p : member(processor, "processors", "post_processor.processors")) added_ends(p, before, after);
    return;
  }
  if (!is_type(processor, "TemplateProcessing")) {
    refuse("post_processor", "expected ByteLevel, TemplateProcessing or a Sequence of them, got " +
                                 processor.value("type", processor.dump()));
  }
  const json& single = member(processor, "single", "post_processor.single");
  const json& specials = member(processor, "special_tokens", "post_processor.special_tokens");
  bool text_seen = false;
  for (const json& piece : single) {
    if (piece.contains("Sequence")) {
      text_seen = true;
      continue;
    }
    const std::string name = piece.contains("SpecialToken") ? piece["SpecialToken"].value("id", "") : "";
    const auto special = specials.find(name);
    if (special == specials.end() || !special->contains("ids") || (*special)["ids"].size() != 1) {
      refuse("post_processor.single", "expected special tokens of one id each around $A, got " + piece.dump());
    }
    (text_seen ? after : before).push_back((*special)["ids"][0].get<int64_t>());
  }
  if (before.size() > 1 || after.size() > 1) {
    refuse("post_processor.single", "GGUF adds at most one token before the text (BOS) and one after (EOS)");
  }
}

using TokensById = std::map<int64_t, std::pair<std::string, int32_t>>;  // id -> token, type

// The model's vocabulary as normal tokens, the added tokens as control
// (special) or user-defined ones.
TokensById tokens_by_id(const json& t, const json& model) {
  TokensById by_id;
  for (const auto& [token, id] : member(model, "vocab", "model.vocab").items()) {
    if (!id.is_number_unsigned()) refuse("model.vocab", "token '" + token + "': expected an id, got " + id.dump());
    by_id[id.get<int64_t>()] = {token, kTypeNormal};
  }
  for (const json& added : member(t, "added_tokens", "added_tokens")) {
    const std::string content = added.value("content", "");
    if (added.value("lstrip", false) || added.value("rstrip", false) || added.value("single_word", false)) {
      refuse("added_tokens", "'" + content + "' strips spaces or matches single words, which GGUF cannot carry");
    }
    by_id[added.value("id", int64_t{-1})] = {content, added.value("special", false) ? kTypeControl : kTypeUserDefined};
  }
  return by_id;
}

// The tokens and types by id (which must run from 0 without gaps), padded to vocab_size.
void write_tokens(const TokensById& by_id, int64_t vocab_size, rill::gguf::Writer& w,
                  std::vector<std::string>& tokens) {
  std::vector<int32_t> types;
  for (const auto& [id, entry] : by_id) {
    if (id != static_cast<int64_t>(tokens.size())) {
      refuse("model.vocab", "ids must run from 0 without gaps; id " + std::to_string(tokens.size()) + " is missing");
    }
    tokens.push_back(entry.first);
    types.push_back(entry.second);
  }
  // llama.cpp sizes its vocabulary by the token list, and refuses a file whose embedding has more
  // rows: the ids the tokenizer never produces get unused placeholder tokens, as its converter
  // writes them.
  if (static_cast<int64_t>(tokens.size()) > vocab_size) {
    refuse("model.vocab", std::to_string(tokens.size()) + " tokens, more than config.json's vocab_size " +
                              std::to_string(vocab_size) + " (the model's embedding rows)");
  }
  while (static_cast<int64_t>(tokens.size()) < vocab_size) {
    tokens.push_back("[PAD" + std::to_string(tokens.size()) + "]");
    types.push_back(kTypeUnused);
  }
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_i32s("tokenizer.ggml.token_type", types);
}

// The merges as "left right" strings.
std::vector<std::string> merge_list(const json& model) {
  std::vector<std::string> merges;
  for (const json& m : member(model, "merges", "model.merges")) {
    if (m.is_string()) merges.push_back(m.get<std::string>());
    else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    else refuse("model.merges", "expected \"left right\" or [left, right], got " + m.dump());
  }
  return merges;
}

void write_ends(const json& t, rill::gguf::Writer& w) {
  std::vector<int64_t> before, after;
  added_ends(member(t, "post_processor", "post_processor"), before, after);
  using Ends = std::tuple<const std::vector<int64_t>*, const char*, const char*>;
  for (const auto& [ids, id_key, add_key] :
       {Ends{&before, "tokenizer.ggml.bos_token_id", "tokenizer.ggml.add_bos_token"},
        Ends{&after, "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_eos_token"}}) {
    w.set_bool(add_key, !ids->empty());
    if (!ids->empty()) w.set_u32(id_key, static_cast<uint32_t>(ids->front()));
  }
}

// The normalizer transformers' LlamaConverter (legacy) and GemmaConvert
// write: spaces become U+2581, with one prepended for Llama. True when it
// prepends (GGUF's add_space_prefix). The pre-tokenizer must be none, or
// Gemma's split at spaces, which the normalizer has left none of.
bool sentencepiece_space_prefix(const json& t) {
  const json& pre = member(t, "pre_tokenizer", "pre_tokenizer");
  const bool no_op_split = is_type(pre, "Split") && pre.contains("pattern") &&
                           pre["pattern"].value("String", "") == " " && !pre.value("invert", true);
  if (!pre.is_null() && !no_op_split) {
    refuse("pre_tokenizer", "expected null or a split at spaces for a SentencePiece BPE (a Metaspace pre-tokenizer "
                            "is not converted), got " + pre.value("type", pre.dump()));
  }
  const auto to_metaspace = [](const json& j) {
    return is_type(j, "Replace") && j.contains("pattern") && j["pattern"].value("String", "") == " " &&
           j.value("content", "") == kMetaspace;
  };
  const json& normalizer = member(t, "normalizer", "normalizer");
  if (to_metaspace(normalizer)) return false;
  if (is_type(normalizer, "Sequence") && normalizer.contains("normalizers") && normalizer["normalizers"].size() == 2 &&
      is_type(normalizer["normalizers"][0], "Prepend") &&
      normalizer["normalizers"][0].value("prepend", "") == kMetaspace && to_metaspace(normalizer["normalizers"][1])) {
    return true;
  }
  refuse("normalizer", "expected a SentencePiece BPE's Replace(\" \", \"\u2581\"), after Prepend(\"\u2581\") for a "
                       "space prefix, got " + normalizer.dump());
}

// The decoder that undoes the normalizer: U+2581 back to spaces, bytes, fused, and the prefix stripped.
void check_sentencepiece_decoder(const json& t, bool space_prefix) {
  const json& decoder = member(t, "decoder", "decoder");
  std::vector<std::string> types;
  if (is_type(decoder, "Sequence") && decoder.contains("decoders")) {
    for (const json& d : decoder["decoders"]) types.push_back(d.value("type", ""));
  }
  std::vector<std::string> expected = {"Replace", "ByteFallback", "Fuse"};
  if (space_prefix) expected.push_back("Strip");
  if (types != expected) {
    refuse("decoder", std::string("expected the Sequence Replace, ByteFallback, Fuse") +
                          (space_prefix ? ", Strip" : "") + " of a SentencePiece BPE, got " + decoder.dump());
  }
}

// The byte offset after the UTF-8 code point at text[at].
size_t next_code_point(const std::string& text, size_t at) {
  ++at;
  while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  return at;
}

// GGUF's SentencePiece vocabulary keeps scores, not merges; its readers
// (llama.cpp, rill) merge any two adjacent pieces that form a piece, the
// highest-scoring piece first. That equals the file's BPE when its merges are
// every split of each piece in the vocabulary (both parts pieces too),
// grouped by piece, as transformers' SentencePiece converters write them:
// then a piece's score is minus the rank of its group. Else refused by name.
std::vector<float> sentencepiece_scores(const std::vector<std::string>& tokens,
                                        const std::vector<std::string>& merges) {
  std::unordered_map<std::string, int64_t> ids;
  for (size_t i = 0; i < tokens.size(); ++i) ids.emplace(tokens[i], static_cast<int64_t>(i));
  std::vector<float> scores(tokens.size(), 0.0f);
  std::vector<int64_t> merges_of(tokens.size(), 0);
  int64_t group = -1, last = -1;
  for (size_t r = 0; r < merges.size(); ++r) {
    const size_t space = merges[r].find(' ');
    const std::string left = merges[r].substr(0, space), right = merges[r].substr(space + 1);
    const auto piece = ids.find(left + right);
    if (space == std::string::npos || ids.count(left) == 0 || ids.count(right) == 0 || piece == ids.end()) {
      refuse("model.merges", "merge " + std::to_string(r) + " (\"" + merges[r] + "\") does not join two pieces of " +
                                 "the vocabulary into one");
    }
    if (piece->second != last) {
      if (merges_of[piece->second] != 0) {
        refuse("model.merges", "the merges forming '" + piece->first + "' are not consecutive (merge " +
                                   std::to_string(r) + "); GGUF's scores rank whole pieces");
      }
      last = piece->second;
      ++group;
      scores[last] = -static_cast<float>(group);
    }
    ++merges_of[last];
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].size() > rill::gguf::kMaxSentencePieceBytes) {
      refuse("model.vocab", "token " + std::to_string(i) + " has " + std::to_string(tokens[i].size()) +
                                " bytes; a SentencePiece piece may have at most " +
                                std::to_string(rill::gguf::kMaxSentencePieceBytes));
    }
    int64_t splits = 0;
    for (size_t at = next_code_point(tokens[i], 0); at < tokens[i].size(); at = next_code_point(tokens[i], at)) {
      splits += ids.count(tokens[i].substr(0, at)) != 0 && ids.count(tokens[i].substr(at)) != 0;
    }
    if (splits != merges_of[i]) {
      refuse("model.merges", "'" + tokens[i] + "' splits into two pieces " + std::to_string(splits) +
                                 " ways but has " + std::to_string(merges_of[i]) +
                                 " merges; GGUF's SentencePiece readers merge every split");
    }
  }
  return scores;
}

// "<0x41>": a byte-fallback piece.
bool is_byte_piece(const std::string& token) {
  return token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>' &&
         std::isxdigit(static_cast<unsigned char>(token[3])) && std::isxdigit(static_cast<unsigned char>(token[4]));
}

void write_sentencepiece(const json& t, const json& model, int64_t vocab_size, const std::string& arch,
                         rill::gguf::Writer& w) {
  if (!model.value("fuse_unk", false) || model.value("ignore_merges", false) ||
      !model.value("continuing_subword_prefix", json()).is_null() ||
      !model.value("end_of_word_suffix", json()).is_null() || !model.value("dropout", json()).is_null()) {
    refuse("model", "a SentencePiece BPE needs fuse_unk and no ignore_merges, continuing_subword_prefix, "
                    "end_of_word_suffix or dropout");
  }
  const bool space_prefix = sentencepiece_space_prefix(t);
  check_sentencepiece_decoder(t, space_prefix);
  const bool gemma = arch.compare(0, 5, "gemma") == 0;
  const json unk = model.value("unk_token", json());
  TokensById by_id = tokens_by_id(t, model);
  int64_t unk_id = -1;
  for (auto& [id, entry] : by_id) {
    if (unk.is_string() && entry.first == unk.get<std::string>()) {
      entry.second = kTypeUnknown;
      unk_id = id;
    } else if (is_byte_piece(entry.first)) {
      entry.second = kTypeByte;
    } else if (gemma && (entry.first == "<start_of_turn>" || entry.first == "<end_of_turn>")) {
      entry.second = kTypeUserDefined;  // as Gemma's SentencePiece model has them; readers make them special
    }
  }
  std::vector<std::string> tokens;
  std::vector<float> scores;
  {
    // Scores from the pieces as tokenizer.json names them; Gemma's converter calls the tab's byte piece "\t".
    std::vector<std::string> pieces;
    for (const auto& entry : by_id) pieces.push_back(entry.second.first);
    scores = sentencepiece_scores(pieces, merge_list(model));
  }
  if (gemma) {
    for (auto& [id, entry] : by_id) {
      if (entry.first == "\t") entry = {"<0x09>", kTypeByte};
    }
  }
  w.set_string("tokenizer.ggml.model", "llama");
  write_tokens(by_id, vocab_size, w, tokens);
  scores.resize(tokens.size(), 0.0f);  // the padding's
  w.set_f32s("tokenizer.ggml.scores", scores);
  w.set_bool("tokenizer.ggml.add_space_prefix", space_prefix);
  if (unk_id >= 0) w.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(unk_id));
  write_ends(t, w);
}

void write_byte_level(const json& t, const json& model, int64_t vocab_size, rill::gguf::Writer& w) {
  if (!model.value("unk_token", json()).is_null() || !model.value("continuing_subword_prefix", json()).is_null() ||
      !model.value("end_of_word_suffix", json()).is_null() || !model.value("dropout", json()).is_null()) {
    refuse("model", "unk_token, continuing_subword_prefix, end_of_word_suffix and dropout must be unset for a "
                    "byte-level BPE GGUF vocabulary");
  }
  if (!is_type(member(t, "decoder", "decoder"), "ByteLevel")) refuse("decoder", "expected ByteLevel");
  const std::string pre = pre_tokenizer_name(t, model.value("ignore_merges", false));
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  std::vector<std::string> tokens;
  write_tokens(tokens_by_id(t, model), vocab_size, w, tokens);
  w.set_strings("tokenizer.ggml.merges", merge_list(model));
  write_ends(t, w);
}

void write_tokenizer(const json& t, int64_t vocab_size, const std::string& arch, rill::gguf::Writer& w) {
  const json& model = member(t, "model", "model");
  if (!is_type(model, "BPE")) {
    refuse("model.type", "expected \"BPE\" (a byte-level BPE, or a SentencePiece BPE with byte_fallback), got " +
                             model.value("type", std::string("none")));
  }
  if (model.value("byte_fallback", false)) {
    write_sentencepiece(t, model, vocab_size, arch, w);
  } else {
    write_byte_level(t, model, vocab_size, w);
  }
}

}  // namespace

bool write_hf_tokenizer(const nlohmann::json& tokenizer, const std::string& path, int64_t vocab_size,
                        const std::string& arch, rill::gguf::Writer& writer, std::string& error) {
  try {
    write_tokenizer(tokenizer, vocab_size, arch, writer);
  } catch (const json::exception& e) {
    error = path + ": " + e.what();
    return false;
  } catch (const Refusal& r) {
    error = path + ": " + r.message;
    return false;
  }
  return true;
}

}  // namespace rill_cli
