// tokenizer.json -> tokenizer.ggml.* for `rill quantize` from a Hugging Face
// folder, as llama.cpp's converter writes a byte-level BPE vocabulary: tokens
// by id, special added tokens as CONTROL and other added tokens as
// USER_DEFINED, merges as "left right", tokenizer.ggml.pre naming the
// pre-tokenizer, and the BOS/EOS tokens the post-processor adds. A tokenizer
// whose behaviour these keys cannot carry is refused by name.
#include <nlohmann/json.hpp>

#include <map>
#include <tuple>

#include "gguf_names.h"
#include "quantize_source.h"

namespace rill_cli {
namespace {

using nlohmann::json;

constexpr int32_t kTypeNormal = 1, kTypeControl = 3, kTypeUserDefined = 4, kTypeUnused = 5;  // llama.cpp's token types

struct Refusal {
  std::string message;
};

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

void write_tokenizer(const json& t, int64_t vocab_size, rill::gguf::Writer& w) {
  const json& model = member(t, "model", "model");
  if (!is_type(model, "BPE")) {
    refuse("model.type", "expected \"BPE\" (a byte-level BPE; SentencePiece vocabularies are not converted), got " +
                             model.value("type", std::string("none")));
  }
  if (model.value("byte_fallback", false) || !model.value("unk_token", json()).is_null() ||
      !model.value("continuing_subword_prefix", json()).is_null() ||
      !model.value("end_of_word_suffix", json()).is_null() || !model.value("dropout", json()).is_null()) {
    refuse("model", "byte_fallback, unk_token, continuing_subword_prefix, end_of_word_suffix and dropout must be "
                    "unset for a byte-level BPE GGUF vocabulary");
  }
  if (!is_type(member(t, "decoder", "decoder"), "ByteLevel")) refuse("decoder", "expected ByteLevel");
  const bool ignore_merges = model.value("ignore_merges", false);
  const std::string pre = pre_tokenizer_name(t, ignore_merges);

  std::map<int64_t, std::pair<std::string, int32_t>> by_id;  // id -> token, type
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
  std::vector<std::string> tokens;
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
  std::vector<std::string> merges;
  for (const json& m : member(model, "merges", "model.merges")) {
    if (m.is_string()) merges.push_back(m.get<std::string>());
    else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    else refuse("model.merges", "expected \"left right\" or [left, right], got " + m.dump());
  }
  std::vector<int64_t> before, after;
  added_ends(member(t, "post_processor", "post_processor"), before, after);
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_i32s("tokenizer.ggml.token_type", types);
  w.set_strings("tokenizer.ggml.merges", merges);
  using Ends = std::tuple<const std::vector<int64_t>*, const char*, const char*>;
  for (const auto& [ids, id_key, add_key] :
       {Ends{&before, "tokenizer.ggml.bos_token_id", "tokenizer.ggml.add_bos_token"},
        Ends{&after, "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_eos_token"}}) {
    w.set_bool(add_key, !ids->empty());
    if (!ids->empty()) w.set_u32(id_key, static_cast<uint32_t>(ids->front()));
  }
}

}  // namespace

bool write_hf_tokenizer(const nlohmann::json& tokenizer, const std::string& path, int64_t vocab_size,
                        rill::gguf::Writer& writer, std::string& error) {
  try {
    write_tokenizer(tokenizer, vocab_size, writer);
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
