// The tokenizer's C API and its rill.hpp wrappers, above all on bad input:
// files that cannot be read or are not JSON, fields of the wrong type,
// unsupported components, ids out of range, buffers too small. Every failure
// is a status with a message naming the file and JSON path or the argument,
// never a crash. The encodings themselves are checked against PyPI tokenizers
// in tokenizer_reference.py.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "rill.h"
#include "rill.hpp"
#include "test_helpers.h"

using rill_test::expect_failure;

namespace {

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/rill_tokenizer_test_" + name;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return path;
}

// A small SentencePiece-style tokenizer: "a b" merge, byte fallback for é,
// <s> added by the post-processor. model_patch replaces the model object.
std::string tokenizer_json(const std::string& model = "", const std::string& pre_tokenizer = "null") {
  const std::string default_model =
      R"({"type": "BPE", "dropout": null, "unk_token": null, "byte_fallback": true,
          "vocab": {"a": 0, "b": 1, "ab": 2, "<s>": 3, "<0xC3>": 4, "<0xA9>": 5, " ": 6},
          "merges": ["a b"]})";
  return R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 3, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": null, "pre_tokenizer": )" +
         pre_tokenizer + R"(,
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}], "pair": [],
                       "special_tokens": {"<s>": {"id": "<s>", "ids": [3], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]},
    "model": )" +
         (model.empty() ? default_model : model) + "}";
}

rill_tokenizer* load_ok(const std::string& name, const std::string& text) {
  rill_tokenizer* tok = nullptr;
  REQUIRE_MESSAGE(rill_tokenizer_load(write_file(name, text).c_str(), &tok) == RILL_OK, rill_last_error());
  return tok;
}

std::vector<int32_t> encode(rill_tokenizer* tok, const std::string& text, bool special) {
  size_t count = 0;
  REQUIRE(rill_tokenizer_encode(tok, text.data(), text.size(), special, nullptr, 0, &count) == RILL_OK);
  std::vector<int32_t> ids(count);
  REQUIRE(rill_tokenizer_encode(tok, text.data(), text.size(), special, ids.data(), ids.size(), &count) == RILL_OK);
  return ids;
}

}  // namespace

TEST_CASE("the small tokenizer encodes and decodes as written") {
  rill_tokenizer* tok = load_ok("ok.json", tokenizer_json());
  CHECK(encode(tok, "ab a\xC3\xA9", true) == std::vector<int32_t>{3, 2, 6, 0, 4, 5});
  CHECK(encode(tok, "ab", false) == std::vector<int32_t>{2});
  int32_t vocab = 0;
  CHECK(rill_tokenizer_vocab_size(tok, &vocab) == RILL_OK);
  CHECK(vocab == 7);
  const int32_t ids[] = {3, 2, 4, 5};
  char buf[32];
  size_t required = 0;
  REQUIRE(rill_tokenizer_decode(tok, ids, 4, 1, buf, sizeof(buf), &required) == RILL_OK);
  CHECK(std::string(buf) == "ab\xC3\xA9");
  CHECK(required == 5);
  rill_tokenizer_destroy(tok);
}

TEST_CASE("loading: unreadable files are RILL_ERROR_IO, bad fields RILL_ERROR_CONFIG with their JSON path") {
  rill_tokenizer* tok = nullptr;
  expect_failure(rill_tokenizer_load(nullptr, &tok), RILL_ERROR_INVALID_ARGUMENT, {"path", "NULL"});
  expect_failure(rill_tokenizer_load("x", nullptr), RILL_ERROR_INVALID_ARGUMENT, {"out", "NULL"});
  expect_failure(rill_tokenizer_load(temp_path("missing.json").c_str(), &tok), RILL_ERROR_IO, {"missing.json"});
  expect_failure(rill_tokenizer_load(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp", &tok), RILL_ERROR_IO,
                 {"tokenizer.json"});
  expect_failure(rill_tokenizer_load(write_file("truncated.json", tokenizer_json().substr(0, 100)).c_str(), &tok),
                 RILL_ERROR_IO, {"truncated.json", "not valid JSON"});
  expect_failure(rill_tokenizer_load(write_file("overflow.json", "{\"version\": 1e706}").c_str(), &tok), RILL_ERROR_IO,
                 {"overflow.json", "not valid JSON", "1e706"});
  expect_failure(rill_tokenizer_load(write_file("array.json", "[1, 2]").c_str(), &tok), RILL_ERROR_CONFIG,
                 {"array.json", "expected an object"});

  struct Case {
    const char* what;
    std::string json;
    std::vector<std::string> message;
  };
  const Case cases[] = {
      {"another model", tokenizer_json(R"({"type": "Unigram", "vocab": []})"), {"model.type", "Unigram", "BPE"}},
      {"dropout", tokenizer_json(R"({"type": "BPE", "dropout": 0.1, "vocab": {}, "merges": []})"),
       {"model.dropout", "only null"}},
      {"vocab as an array", tokenizer_json(R"({"type": "BPE", "vocab": [], "merges": []})"),
       {"model.vocab", "expected an object, got array"}},
      {"an id as a string", tokenizer_json(R"({"type": "BPE", "vocab": {"a": "0"}, "merges": []})"),
       {"model.vocab.a", "expected an integer, got string"}},
      {"a negative id", tokenizer_json(R"({"type": "BPE", "vocab": {"a": -1}, "merges": []})"),
       {"model.vocab.a", "from 0"}},
      {"a merge of unknown tokens", tokenizer_json(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a c"]})"),
       {"model.merges[0]", "'c' is not in the vocabulary"}},
      {"a merge without a space", tokenizer_json(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["ac"]})"),
       {"model.merges[0]", "expected \"left right\""}},
      {"an unknown pre-tokenizer",
       tokenizer_json("", R"({"type": "Sequence", "pretokenizers": [{"type": "Digits"}, {"type": "Shout"}]})"),
       {"pre_tokenizer.pretokenizers[1].type", "unsupported type 'Shout'", "Metaspace"}},
      {"a regex PCRE2 refuses",
       tokenizer_json("", R"({"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Isolated", "invert": false})"),
       {"pre_tokenizer.pattern.Regex", "PCRE2", "(a"}},
      {"an unknown behavior",
       tokenizer_json("", R"({"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways", "invert": false})"),
       {"pre_tokenizer.behavior", "Sideways", "Isolated"}},
      {"a replacement of two characters",
       tokenizer_json("", R"({"type": "Metaspace", "replacement": "ab", "prepend_scheme": "always", "split": true})"),
       {"pre_tokenizer.replacement", "one character"}},
      {"a missing type", tokenizer_json("", R"({"add_prefix_space": true})"), {"pre_tokenizer.type", "missing"}},
  };
  std::string nested = R"({"type": "Lowercase"})";
  for (int i = 0; i < 5000; ++i) nested = R"({"type": "Sequence", "pretokenizers": [)" + nested + "]}";
  expect_failure(rill_tokenizer_load(write_file("nested.json", tokenizer_json("", nested)).c_str(), &tok),
                 RILL_ERROR_CONFIG, {"nested.json", "nested too deeply"});
  for (const Case& c : cases) {
    CAPTURE(c.what);
    tok = nullptr;
    const std::string path = write_file("case.json", c.json);
    const rill_status status = rill_tokenizer_load(path.c_str(), &tok);
    CHECK_MESSAGE(status == RILL_ERROR_CONFIG, rill_status_string(status), ": ", rill_last_error());
    CHECK(tok == nullptr);
    for (const std::string& part : c.message) {
      CHECK_MESSAGE(std::string(rill_last_error()).find(part) != std::string::npos, "'", part, "' missing from: ",
                    rill_last_error());
    }
    CHECK(std::string(rill_last_error()).find("case.json") != std::string::npos);
  }
  rill_tokenizer_destroy(nullptr);
}

TEST_CASE("encode: bad text, NULL buffers and a capacity too small are refused without writing") {
  rill_tokenizer* tok = load_ok("encode.json", tokenizer_json());
  size_t count = 99;
  int32_t ids[2] = {-7, -7};
  expect_failure(rill_tokenizer_encode(nullptr, "a", 1, 1, ids, 2, &count), RILL_ERROR_INVALID_ARGUMENT, {"tokenizer"});
  expect_failure(rill_tokenizer_encode(tok, nullptr, 1, 1, ids, 2, &count), RILL_ERROR_INVALID_ARGUMENT, {"text"});
  expect_failure(rill_tokenizer_encode(tok, "a", 1, 1, ids, 2, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"out_count"});
  expect_failure(rill_tokenizer_encode(tok, "a", 1, 1, nullptr, 2, &count), RILL_ERROR_INVALID_ARGUMENT, {"ids"});
  expect_failure(rill_tokenizer_encode(tok, "a\xC3", 2, 1, ids, 2, &count), RILL_ERROR_INVALID_ARGUMENT,
                 {"UTF-8", "byte 1"});
  expect_failure(rill_tokenizer_encode(tok, "a\xED\xA0\x80", 4, 1, ids, 2, &count), RILL_ERROR_INVALID_ARGUMENT,
                 {"UTF-8"});  // an encoded surrogate
  expect_failure(rill_tokenizer_encode(tok, "a a a", 5, 1, ids, 2, &count), RILL_ERROR_INVALID_ARGUMENT,
                 {"capacity", "at least 6"});
  CHECK(count == 6);
  CHECK(ids[0] == -7);
  CHECK(rill_tokenizer_encode(tok, nullptr, 0, 0, nullptr, 0, &count) == RILL_OK);
  CHECK(count == 0);
  rill_tokenizer_destroy(tok);
}

TEST_CASE("decode: ids out of range name the id and the vocab size; small buffers are never truncated") {
  rill_tokenizer* tok = load_ok("decode.json", tokenizer_json());
  char buf[4] = "xyz";
  size_t required = 0;
  const int32_t bad[] = {0, 7};
  expect_failure(rill_tokenizer_decode(tok, bad, 2, 0, buf, sizeof(buf), &required), RILL_ERROR_INVALID_ARGUMENT,
                 {"ids[1]", "7", "vocab_size 7"});
  const int32_t negative[] = {-1};
  expect_failure(rill_tokenizer_decode(tok, negative, 1, 0, buf, sizeof(buf), &required), RILL_ERROR_INVALID_ARGUMENT,
                 {"ids[0]", "-1"});
  const int32_t ids[] = {2, 2, 2};  // "ababab": 7 bytes with the NUL
  expect_failure(rill_tokenizer_decode(tok, ids, 3, 0, buf, sizeof(buf), &required), RILL_ERROR_INVALID_ARGUMENT,
                 {"buf_size", "at least 7"});
  CHECK(required == 7);
  CHECK(std::string(buf) == "xyz");
  expect_failure(rill_tokenizer_decode(tok, ids, 3, 0, nullptr, 4, &required), RILL_ERROR_INVALID_ARGUMENT, {"buf"});
  expect_failure(rill_tokenizer_decode(tok, nullptr, 3, 0, buf, 4, &required), RILL_ERROR_INVALID_ARGUMENT, {"ids"});
  expect_failure(rill_tokenizer_decode(tok, ids, 3, 0, buf, 4, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"out_required"});
  int32_t id = -1;
  CHECK(rill_tokenizer_token_to_id(tok, "<s>", &id) == RILL_OK);
  CHECK(id == 3);
  expect_failure(rill_tokenizer_token_to_id(tok, "zzz", &id), RILL_ERROR_NOT_FOUND, {"zzz"});
  CHECK(id == 3);
  rill_tokenizer_destroy(tok);
}

TEST_CASE("detokenizer: bytes of one character wait for the rest; a failed push changes nothing") {
  rill_tokenizer* tok = load_ok("stream.json", tokenizer_json());
  rill_detokenizer* detok = nullptr;
  REQUIRE(rill_detokenizer_create(tok, 1, &detok) == RILL_OK);
  char buf[16];
  size_t len = 99;
  CHECK(rill_detokenizer_push(detok, 3, buf, sizeof(buf), &len) == RILL_OK);  // <s>, skipped
  CHECK(len == 0);
  CHECK(rill_detokenizer_push(detok, 4, buf, sizeof(buf), &len) == RILL_OK);  // <0xC3>: half of é
  CHECK(len == 0);
  CHECK(rill_detokenizer_push(detok, 5, buf, sizeof(buf), &len) == RILL_OK);  // <0xA9>: may still grow
  CHECK(len == 0);
  char tiny[2];
  expect_failure(rill_detokenizer_push(detok, 2, tiny, sizeof(tiny), &len), RILL_ERROR_INVALID_ARGUMENT,
                 {"buf_size", "at least 5"});
  CHECK(len == 4);
  expect_failure(rill_detokenizer_push(detok, 9, buf, sizeof(buf), &len), RILL_ERROR_INVALID_ARGUMENT,
                 {"ids[0]", "9"});
  REQUIRE(rill_detokenizer_push(detok, 2, buf, sizeof(buf), &len) == RILL_OK);  // the same push again
  CHECK(std::string(buf) == "\xC3\xA9" "ab");
  CHECK(len == 4);
  REQUIRE(rill_detokenizer_push(detok, 4, buf, sizeof(buf), &len) == RILL_OK);
  CHECK(len == 0);
  REQUIRE(rill_detokenizer_flush(detok, buf, sizeof(buf), &len) == RILL_OK);  // a lone lead byte
  CHECK(std::string(buf) == "\xEF\xBF\xBD");
  expect_failure(rill_detokenizer_push(nullptr, 2, buf, sizeof(buf), &len), RILL_ERROR_INVALID_ARGUMENT,
                 {"detokenizer"});
  expect_failure(rill_detokenizer_create(nullptr, 0, &detok), RILL_ERROR_INVALID_ARGUMENT, {"tokenizer"});
  rill_detokenizer_destroy(detok);
  rill_detokenizer_destroy(nullptr);
  rill_tokenizer_destroy(tok);
}

TEST_CASE("rill.hpp: Tokenizer and Detokenizer own their handles and throw rill::Error") {
  const std::string path = write_file("hpp.json", tokenizer_json());
  rill::Tokenizer tok(path);
  CHECK(tok.vocab_size() == 7);
  CHECK(tok.encode("ab") == std::vector<int32_t>{3, 2});
  CHECK(tok.decode({3, 2, 4, 5}, true) == "ab\xC3\xA9");
  CHECK(tok.token_to_id("ab") == 2);
  rill::Detokenizer detok(tok, true);
  std::string streamed;
  for (const int32_t id : {3, 0, 4, 5, 1}) streamed += detok.push(id);
  CHECK(streamed == "a\xC3\xA9" "b");
  CHECK(detok.flush().empty());
  try {
    tok.decode({-2});
    FAIL("decode of -2 did not throw");
  } catch (const rill::Error& e) {
    CHECK(e.status() == RILL_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("-2") != std::string::npos);
  }
  CHECK_THROWS_AS(rill::Tokenizer(temp_path("nothing.json")), rill::Error);
}

TEST_CASE("mutated files and hostile ids give a status, never a crash") {
  // Byte flips, deletions and truncations of a valid file; what loads is used.
  const std::string original = tokenizer_json("", R"json({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\s+(?!\\S)"}, "behavior": "Isolated", "invert": false},
      {"type": "Metaspace", "replacement": "_", "prepend_scheme": "first", "split": true}]})json");
  std::mt19937 rng(1234);
  int loaded = 0;
  for (int round = 0; round < 1500; ++round) {
    std::string text = original;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = static_cast<char>(rng() % 256); break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        default: text.resize(at); break;
      }
      if (text.empty()) text = "{";
    }
    rill_tokenizer* tok = nullptr;
    const rill_status status = rill_tokenizer_load(write_file("mutated.json", text).c_str(), &tok);
    CHECK_MESSAGE((status == RILL_OK || status == RILL_ERROR_IO || status == RILL_ERROR_CONFIG),
                  rill_status_string(status), ": ", rill_last_error());
    if (status != RILL_OK) continue;
    ++loaded;
    int32_t vocab = 0;
    REQUIRE(rill_tokenizer_vocab_size(tok, &vocab) == RILL_OK);
    const std::string sample = "ab <s>a\xC3\xA9 b  \n";
    size_t count = 0;
    std::vector<int32_t> ids(64);
    CHECK(rill_tokenizer_encode(tok, sample.data(), sample.size(), 1, ids.data(), ids.size(), &count) == RILL_OK);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab + 2)) - 1;
    char buf[256];
    size_t required = 0;
    const rill_status decoded = rill_tokenizer_decode(tok, ids.data(), 8, 0, buf, sizeof(buf), &required);
    CHECK((decoded == RILL_OK || decoded == RILL_ERROR_INVALID_ARGUMENT));
    rill_tokenizer_destroy(tok);
  }
  CHECK(loaded > 0);
  MESSAGE(loaded, " of 1500 mutated files loaded");

  // An id near INT32_MAX allocates nothing in proportion to it.
  rill_tokenizer* tok = nullptr;
  REQUIRE_MESSAGE(rill_tokenizer_load(write_file("big_id.json", tokenizer_json(
                      R"({"type": "BPE", "vocab": {"a": 2147483646, "b": 0}, "merges": []})")).c_str(), &tok) == RILL_OK,
                  rill_last_error());
  int32_t vocab = 0;
  CHECK(rill_tokenizer_vocab_size(tok, &vocab) == RILL_OK);
  CHECK(vocab == 2147483647);
  const int32_t ids[] = {2147483646, 5, 0};
  char buf[8];
  size_t required = 0;
  REQUIRE(rill_tokenizer_decode(tok, ids, 3, 0, buf, sizeof(buf), &required) == RILL_OK);
  CHECK(std::string(buf) == "ab");  // id 5 has no token: nothing, as in tokenizers
  rill_tokenizer_destroy(tok);
}
