// The GGUF reader on files written here byte by byte: a valid file with every
// metadata type, its truncation at every byte, and each way a header can
// lie, which must be RILL_ERROR_IO with a message naming what is wrong. Under
// the sanitizer build every parse reads an exactly-sized heap copy, so any
// read past the end is caught.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "gguf_names.h"
#include "gguf_reader.h"
#include "gguf_types.h"
#include "rill_backend.h"

namespace {

using rill::gguf::Contents;
using rill::gguf::ValueType;

// Appends GGUF's little-endian fields.
struct Writer {
  std::vector<unsigned char> bytes;

  template <class T>
  Writer& raw(T value) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &value, sizeof(T));
    bytes.insert(bytes.end(), b, b + sizeof(T));
    return *this;
  }
  Writer& u32(uint32_t v) { return raw(v); }
  Writer& u64(uint64_t v) { return raw(v); }
  Writer& str(const std::string& s) {
    u64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  Writer& header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(tensors).u64(kvs);
  }
  Writer& key(const std::string& k, ValueType type) { return str(k).u32(static_cast<uint32_t>(type)); }
  Writer& tensor(const std::string& name, std::initializer_list<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  Writer& pad(size_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
    return *this;
  }
  Writer& fill(size_t n, unsigned char value) {
    bytes.insert(bytes.end(), n, value);
    return *this;
  }
};

// Parses a heap copy of exactly the first n bytes.
rill_status parse_prefix(const std::vector<unsigned char>& bytes, size_t n, Contents& out, std::string& error) {
  std::unique_ptr<unsigned char[]> copy(new unsigned char[n == 0 ? 1 : n]);
  if (n != 0) std::memcpy(copy.get(), bytes.data(), n);
  const rill_status status = rill::gguf::parse(n == 0 ? nullptr : copy.get(), n, out, error);
  out = Contents{};  // its views point into the copy
  return status;
}

// Parses bytes and expects RILL_ERROR_IO with every part in the message.
void expect_refused(const Writer& w, std::initializer_list<std::string> parts) {
  Contents contents;
  std::string error;
  const rill_status status = parse_prefix(w.bytes, w.bytes.size(), contents, error);
  CHECK_MESSAGE(status == RILL_ERROR_IO, "status ", static_cast<int>(status), "; message: ", error);
  for (const std::string& part : parts)
    CHECK_MESSAGE(error.find(part) != std::string::npos, "'", part, "' missing from: ", error);
}

// A valid file: every metadata type, alignment 64, an F32 [2, 3] matrix, an
// F16 vector and a Q8_0 [2, 32] matrix.
Writer valid_file() {
  Writer w;
  w.header(3, 16);
  w.key("general.architecture", ValueType::STRING).str("llama");
  w.key("general.alignment", ValueType::U32).u32(64);
  w.key("k.u8", ValueType::U8).raw<uint8_t>(200);
  w.key("k.i8", ValueType::I8).raw<int8_t>(-5);
  w.key("k.u16", ValueType::U16).raw<uint16_t>(60000);
  w.key("k.i16", ValueType::I16).raw<int16_t>(-30000);
  w.key("k.i32", ValueType::I32).raw<int32_t>(-7);
  w.key("k.f32", ValueType::F32).raw<float>(0.5f);
  w.key("k.bool", ValueType::BOOL).raw<uint8_t>(1);
  w.key("k.u64", ValueType::U64).u64(uint64_t{1} << 40);
  w.key("k.i64", ValueType::I64).raw<int64_t>(INT64_MIN);
  w.key("k.f64", ValueType::F64).raw<double>(-2.25);
  w.key("k.strings", ValueType::ARRAY).u32(static_cast<uint32_t>(ValueType::STRING)).u64(3).str("a").str("").str("ccc");
  w.key("k.floats", ValueType::ARRAY).u32(static_cast<uint32_t>(ValueType::F32)).u64(2).raw(1.5f).raw(-3.0f);
  w.key("k.ints", ValueType::ARRAY).u32(static_cast<uint32_t>(ValueType::I32)).u64(2).raw<int32_t>(-1).raw<int32_t>(9);
  w.key("k.empty", ValueType::ARRAY).u32(static_cast<uint32_t>(ValueType::U8)).u64(0);
  w.tensor("matrix", {3, 2}, 0, 0);     // 24 bytes at 0
  w.tensor("vector", {5}, 1, 64);       // 10 bytes at 64
  w.tensor("quantized", {32, 2}, 8, 128);  // 2 blocks of 34 bytes at 128
  w.pad(64);
  for (int i = 0; i < 6; ++i) w.raw(static_cast<float>(i));
  w.pad(64).fill(10, 0x3c).pad(64).fill(68, 0x11);
  return w;
}

}  // namespace

TEST_CASE("gguf: a valid file's header, metadata of every type, tensors and data") {
  const Writer w = valid_file();
  Contents c;
  std::string error;
  REQUIRE_MESSAGE(rill::gguf::parse(w.bytes.data(), w.bytes.size(), c, error) == RILL_OK, error);
  CHECK(c.version == 3);
  CHECK(c.alignment == 64);
  CHECK(c.data_offset % 64 == 0);
  CHECK(c.metadata.size() == 16);

  std::string_view s;
  REQUIRE(c.find("general.architecture") != nullptr);
  CHECK((c.find("general.architecture")->as_string(s) && s == "llama"));
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  CHECK((c.find("k.u8")->as_u64(u) && u == 200));
  CHECK((c.find("k.i8")->as_i64(i) && i == -5));
  CHECK(!c.find("k.i8")->as_u64(u));  // negative
  CHECK((c.find("k.u16")->as_u64(u) && u == 60000));
  CHECK((c.find("k.i16")->as_i64(i) && i == -30000));
  CHECK((c.find("k.i32")->as_f64(f) && f == -7.0));
  CHECK((c.find("k.f32")->as_f64(f) && f == 0.5));
  CHECK(!c.find("k.f32")->as_i64(i));
  CHECK((c.find("k.bool")->as_bool(b) && b));
  CHECK((c.find("k.u64")->as_u64(u) && u == (uint64_t{1} << 40)));
  CHECK((c.find("k.i64")->as_i64(i) && i == INT64_MIN));
  CHECK((c.find("k.f64")->as_f64(f) && f == -2.25));
  CHECK(!c.find("k.f64")->as_string(s));

  const rill::gguf::Value* strings = c.find("k.strings");
  REQUIRE(strings != nullptr);
  CHECK(strings->type() == ValueType::ARRAY);
  CHECK(strings->element_type() == ValueType::STRING);
  CHECK(strings->size() == 3);
  CHECK((strings->element_string(0, s) && s == "a"));
  CHECK((strings->element_string(1, s) && s.empty()));
  CHECK((strings->element_string(2, s) && s == "ccc"));
  CHECK(!strings->element_string(3, s));
  const rill::gguf::Value* floats = c.find("k.floats");
  CHECK((floats->element_f64(1, f) && f == -3.0));
  CHECK(!floats->element_f64(2, f));
  CHECK((c.find("k.ints")->element_i64(0, i) && i == -1));
  CHECK((c.find("k.ints")->element_i64(1, i) && i == 9));
  CHECK(c.find("k.empty")->size() == 0);
  CHECK(c.find("no.such.key") == nullptr);

  REQUIRE(c.tensors.size() == 3);
  const rill::gguf::TensorInfo* m = c.find_tensor("matrix");
  REQUIRE(m != nullptr);
  CHECK(m->dims == std::vector<uint64_t>{3, 2});
  CHECK(m->bytes == 24);
  CHECK(m->data == w.bytes.data() + c.data_offset);
  float values[6];
  std::memcpy(values, m->data, sizeof(values));
  CHECK(values[5] == 5.0f);
  CHECK(c.find_tensor("vector")->bytes == 10);
  CHECK(c.find_tensor("quantized")->bytes == 68);
  CHECK(c.find_tensor("quantized")->data == w.bytes.data() + c.data_offset + 128);
  CHECK(c.find_tensor("nothing") == nullptr);
}

TEST_CASE("gguf: the file cut short at every byte is refused") {
  const Writer w = valid_file();
  for (size_t n = 0; n < w.bytes.size(); ++n) {
    Contents c;
    std::string error;
    const rill_status status = parse_prefix(w.bytes, n, c, error);
    CHECK_MESSAGE(status == RILL_ERROR_IO, "a file cut at byte ", n, " was accepted");
    CHECK_MESSAGE(!error.empty(), "a file cut at byte ", n, " was refused without a message");
  }
  Contents c;
  std::string error;
  CHECK(parse_prefix(w.bytes, w.bytes.size(), c, error) == RILL_OK);
}

TEST_CASE("gguf: header fields") {
  Writer magic;
  magic.bytes = {'G', 'G', 'M', 'L', 3, 0, 0, 0};
  expect_refused(magic, {"not a GGUF file"});
  expect_refused(Writer().header(0, 0, 1), {"version 1 is not supported"});
  expect_refused(Writer().header(0, 0, 4), {"version 4 is not supported"});
  expect_refused(Writer().header(0, 0, 0x03000000), {"big-endian"});
  expect_refused(Writer().header(0, uint64_t{1} << 60), {"metadata count 1152921504606846976 cannot fit"});
  expect_refused(Writer().header(UINT64_MAX, 0), {"tensor count 18446744073709551615 cannot fit"});
  // A count that fits the bound but not the entries that follow.
  expect_refused(Writer().header(0, 2).key("a", ValueType::U8).raw<uint8_t>(1).key("b", ValueType::U64).fill(1, 0),
                 {"metadata 'b'", "truncated: u64"});
  Contents c;
  std::string error;
  const Writer empty = Writer().header(0, 0);
  CHECK(rill::gguf::parse(empty.bytes.data(), empty.bytes.size(), c, error) == RILL_OK);
}

TEST_CASE("gguf: hostile metadata") {
  expect_refused(Writer().header(0, 1).u64(UINT64_MAX).fill(16, 0), {"metadata pair 0", "key length", "past the end"});
  expect_refused(Writer().header(0, 1).str("").u32(0).fill(8, 0), {"metadata pair 0", "key is empty"});
  expect_refused(Writer().header(0, 1).key("a", static_cast<ValueType>(13)).fill(8, 0),
                 {"metadata 'a'", "unknown value type 13"});
  expect_refused(Writer().header(0, 1).key("a", ValueType::STRING).u64(uint64_t{1} << 62).fill(8, 0),
                 {"metadata 'a'", "string value length 4611686018427387904", "past the end"});
  expect_refused(Writer().header(0, 1).key("a", ValueType::ARRAY).u32(9).u64(1).fill(8, 0),
                 {"metadata 'a'", "arrays of arrays"});
  expect_refused(Writer().header(0, 1).key("a", ValueType::ARRAY).u32(77).u64(1).fill(8, 0),
                 {"metadata 'a'", "unknown array element type 77"});
  expect_refused(Writer().header(0, 1).key("a", ValueType::ARRAY).u32(8).u64(uint64_t{1} << 61).fill(8, 0),
                 {"metadata 'a'", "array of 2305843009213693952 strings cannot fit"});
  expect_refused(Writer().header(0, 1).key("a", ValueType::ARRAY).u32(12).u64(uint64_t{1} << 61).fill(8, 0),
                 {"metadata 'a'", "array of 2305843009213693952 f64 values cannot fit"});
  expect_refused(Writer().header(0, 1).key("a", ValueType::ARRAY).u32(8).u64(2).str("x").u64(100),
                 {"metadata 'a'", "array string length 100", "past the end"});
  expect_refused(Writer().header(0, 2).key("a", ValueType::U8).raw<uint8_t>(1).key("a", ValueType::U8).raw<uint8_t>(2),
                 {"metadata key 'a' appears twice"});
  expect_refused(Writer().header(0, 1).key("general.alignment", ValueType::U64).u64(32),
                 {"general.alignment is a u64, expected a u32"});
  expect_refused(Writer().header(0, 1).key("general.alignment", ValueType::U32).u32(0),
                 {"general.alignment 0 is not a power of two"});
  expect_refused(Writer().header(0, 1).key("general.alignment", ValueType::U32).u32(48),
                 {"general.alignment 48 is not a power of two"});
}

TEST_CASE("gguf: hostile tensor infos") {
  auto one = [](std::initializer_list<uint64_t> dims, uint32_t type, uint64_t offset, size_t data = 64) {
    Writer w;
    w.header(1, 0).tensor("t", dims, type, offset).pad(32).fill(data, 0);
    return w;
  };
  expect_refused(one({}, 0, 0), {"tensor 0 't'", "0 dimensions"});
  expect_refused(one({1, 1, 1, 1, 1}, 0, 0), {"tensor 0 't'", "5 dimensions"});
  expect_refused(one({4, 0}, 0, 0), {"tensor 0 't'", "dimension 1 is 0"});
  expect_refused(one({uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0), {"tensor 0 't'", "dimensions overflow"});
  expect_refused(one({UINT64_MAX}, 0, 0), {"tensor 0 't'", "dimensions overflow"});
  expect_refused(one({4}, 4, 0), {"tensor 0 't'", "unknown tensor type id 4"});
  expect_refused(one({4}, 1000, 0), {"tensor 0 't'", "unknown tensor type id 1000"});
  expect_refused(one({16}, 8, 0), {"tensor 0 't'", "dimension 0 (16) is not a multiple of Q8_0's block of 32"});
  expect_refused(one({4}, 0, 16), {"tensor 't'", "data offset 16 is not a multiple of the alignment 32"});
  expect_refused(one({4}, 0, 64), {"tensor 't'", "runs past the end of the data section (64 bytes)"});
  expect_refused(one({17}, 0, 0), {"tensor 't'", "runs past the end"});
  // An offset near 2^64: offset + size wraps around if added unchecked.
  expect_refused(one({4}, 0, UINT64_MAX - 31), {"tensor 't'", "runs past the end"});
  // 2^62 F32 elements fit an element count but not a byte size.
  expect_refused(one({uint64_t{1} << 61, 2}, 0, 0), {"tensor 0 't'", "byte size overflows"});
  expect_refused(one({uint64_t{1} << 60}, 0, 0), {"tensor 't'", "runs past the end"});
  expect_refused(Writer().header(1, 0).u64(UINT64_MAX).fill(40, 0), {"tensor 0", "tensor name length", "past the end"});

  Writer dup;
  dup.header(2, 0).tensor("t", {4}, 0, 0).tensor("t", {4}, 0, 32).pad(32).fill(64, 0);
  expect_refused(dup, {"tensor name 't' appears twice"});
  Writer overlap;
  overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad(32).fill(64, 0);
  expect_refused(overlap, {"tensors 'a' and 'b' overlap"});
  // The data section itself beyond the file: infos end, padding is missing.
  Writer no_data;
  no_data.header(1, 0).tensor("t", {1}, 0, 0);
  expect_refused(no_data, {"truncated: the data section starts at byte 64"});
}

TEST_CASE("gguf: every tensor type id has the gguf package's block geometry") {
  // A few sizes from gguf's GGML_QUANT_SIZES, which the table copies.
  struct Expected {
    uint32_t id;
    const char* name;
    uint32_t elems, bytes;
  };
  for (const Expected& e : {Expected{0, "F32", 1, 4}, Expected{1, "F16", 1, 2}, Expected{2, "Q4_0", 32, 18},
                            Expected{8, "Q8_0", 32, 34}, Expected{9, "Q8_1", 32, 40}, Expected{12, "Q4_K", 256, 144},
                            Expected{13, "Q5_K", 256, 176}, Expected{14, "Q6_K", 256, 210},
                            Expected{30, "BF16", 1, 2}, Expected{39, "MXFP4", 32, 17}}) {
    const rill::gguf::TensorTypeTraits* t = rill::gguf::tensor_type_traits(e.id);
    REQUIRE(t != nullptr);
    CHECK(std::string(t->name) == e.name);
    CHECK(t->block_elems == e.elems);
    CHECK(t->block_bytes == e.bytes);
  }
  for (uint32_t retired : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u, 0xffffffffu})
    CHECK(rill::gguf::tensor_type_traits(retired) == nullptr);
}

TEST_CASE("gguf: the type ids rill runs map to its dtypes, with the same block geometry") {
  const std::pair<uint32_t, rill_dtype> mapped[] = {
      {0, RILL_DTYPE_F32},   {1, RILL_DTYPE_F16},   {30, RILL_DTYPE_BF16},  {8, RILL_DTYPE_Q8_0},
      {2, RILL_DTYPE_Q4_0},  {6, RILL_DTYPE_Q5_0},  {7, RILL_DTYPE_Q5_1},   {12, RILL_DTYPE_Q4_K},
      {13, RILL_DTYPE_Q5_K}, {14, RILL_DTYPE_Q6_K}};
  for (const auto& entry : mapped) {
    const uint32_t id = entry.first;
    const rill_dtype dtype = entry.second;
    CAPTURE(id);
    rill_dtype got = RILL_DTYPE_MAX_ENUM;
    REQUIRE(rill::gguf::tensor_type_to_rill(id, got));
    CHECK(got == dtype);
    const rill::gguf::TensorTypeTraits* t = rill::gguf::tensor_type_traits(id);
    CHECK(t->block_elems == rill_backend_block_elements(dtype));
    CHECK(t->block_bytes == rill_backend_block_bytes(dtype));
  }
  rill_dtype unused = RILL_DTYPE_F32;
  for (uint32_t other : {3u, 9u, 10u, 15u, 20u, 39u}) CHECK_FALSE(rill::gguf::tensor_type_to_rill(other, unused));
}

TEST_CASE("gguf: File::open maps regular files and refuses everything else") {
  const char* dir = std::getenv("TMPDIR");
  const std::string base = std::string(dir != nullptr ? dir : "/tmp") + "/rill_gguf_test_" + std::to_string(getpid());
  std::unique_ptr<rill::gguf::File> file;
  std::string error;

  CHECK(rill::gguf::File::open(base + "_missing", file, error) == RILL_ERROR_IO);
  CHECK(error.find("cannot open") != std::string::npos);

  const std::string folder = base + "_dir";
  REQUIRE(::mkdir(folder.c_str(), 0700) == 0);
  CHECK(rill::gguf::File::open(folder, file, error) == RILL_ERROR_IO);
  CHECK_MESSAGE(error.find("not a regular file") != std::string::npos, error);
  ::rmdir(folder.c_str());

  // Opening a FIFO with no writer must neither block nor be read.
  const std::string fifo = base + "_fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(rill::gguf::File::open(fifo, file, error) == RILL_ERROR_IO);
  CHECK_MESSAGE(error.find("not a regular file") != std::string::npos, error);
  ::unlink(fifo.c_str());

  const std::string empty = base + "_empty.gguf";
  std::FILE* f = std::fopen(empty.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fclose(f);
  CHECK(rill::gguf::File::open(empty, file, error) == RILL_ERROR_IO);
  CHECK_MESSAGE(error.find("truncated") != std::string::npos, error);
  ::unlink(empty.c_str());
  CHECK(file == nullptr);

  const std::string valid = base + "_valid.gguf";
  const Writer w = valid_file();
  f = std::fopen(valid.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(w.bytes.data(), 1, w.bytes.size(), f) == w.bytes.size());
  std::fclose(f);
  REQUIRE_MESSAGE(rill::gguf::File::open(valid, file, error) == RILL_OK, error);
  ::unlink(valid.c_str());
  REQUIRE(file != nullptr);
  const rill::gguf::TensorInfo* q = file->contents().find_tensor("quantized");
  REQUIRE(q != nullptr);
  // The mapping is page-aligned, so each tensor is aligned as the file says.
  CHECK(reinterpret_cast<uintptr_t>(q->data) % 64 == 0);
  CHECK(q->data[0] == 0x11);
}

TEST_CASE("gguf names: every architecture's tensor names map both ways") {
  for (const auto& entry : rill::gguf::architectures()) {
    const std::string& arch = entry.first;
    const rill::gguf::Architecture& a = entry.second;
    CAPTURE(arch);
    for (const std::string& name :
         {std::string("token_embd.weight"), std::string("output.weight"), std::string("blk.11.attn_q.weight"),
          std::string("blk.0.ffn_norm.weight"), std::string("blk.3.attn_v.bias")}) {
      std::string hf, back;
      REQUIRE(rill::gguf::hf_tensor_name(name, a, hf));
      REQUIRE(rill::gguf::gguf_tensor_name(hf, a, back));
      CHECK(back == name);
    }
    for (const auto& [gguf, hf] : a.own_names) {
      std::string back;
      REQUIRE(rill::gguf::gguf_tensor_name("model.layers.2." + hf, a, back));
      CHECK(back == "blk.2." + gguf);
    }
    std::string out;
    CHECK_FALSE(rill::gguf::hf_tensor_name("blk.x.attn_q.weight", a, out));
    CHECK_FALSE(rill::gguf::hf_tensor_name("blk.1.attn_qq.weight", a, out));
    CHECK_FALSE(rill::gguf::gguf_tensor_name("model.layers.1.self_attn.rotary_emb.inv_freq", a, out));
    CHECK_FALSE(rill::gguf::gguf_tensor_name("model.layers.", a, out));
  }
  // Gemma 2's own names replace the common ones: its post-attention norm is not ffn_norm.
  std::string out;
  REQUIRE(rill::gguf::gguf_tensor_name("model.layers.0.post_attention_layernorm.weight",
                                       rill::gguf::architectures().at("gemma2"), out));
  CHECK(out == "blk.0.post_attention_norm.weight");
}

TEST_CASE("gguf names: the tensors each architecture's file must hold") {
  const auto has = [](const std::vector<std::string>& names, const char* name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  const auto& archs = rill::gguf::architectures();
  const std::vector<std::string> llama = rill::gguf::required_tensors(archs.at("llama"), 2, true, false, false);
  CHECK(llama.size() == 2 + 2 * 9);  // embedding, final norm; 2 norms and 7 projections per layer
  CHECK_FALSE(has(llama, "output.weight"));
  CHECK(has(llama, "blk.1.ffn_gate.weight"));
  CHECK(has(rill::gguf::required_tensors(archs.at("qwen2"), 1, false, true, false), "blk.0.attn_v.bias"));
  // Phi-3's fused matrices replace the separate ones.
  const std::vector<std::string> phi3 = rill::gguf::required_tensors(archs.at("phi3"), 1, false, false, false);
  CHECK(has(phi3, "output.weight"));
  CHECK(has(phi3, "blk.0.attn_qkv.weight"));
  CHECK(has(phi3, "blk.0.ffn_up.weight"));
  for (const char* fused :
       {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.ffn_gate.weight"}) {
    CHECK_FALSE(has(phi3, fused));
  }
  CHECK(phi3.size() == 3 + 6);
  // Gemma 3: the sandwich norms and the per-head q/k norms beside the common tensors.
  const std::vector<std::string> gemma3 = rill::gguf::required_tensors(archs.at("gemma3"), 1, true, false, false);
  for (const char* own : {"blk.0.post_attention_norm.weight", "blk.0.post_ffw_norm.weight", "blk.0.attn_q_norm.weight",
                          "blk.0.attn_k_norm.weight", "blk.0.ffn_norm.weight", "blk.0.attn_q.weight"}) {
    CHECK(has(gemma3, own));
  }
  CHECK(gemma3.size() == 2 + 13);
  CHECK(rill::gguf::hf_folder_architectures() == "gemma, gemma2, gemma3_text, llama, phi3, qwen2, qwen3");
}

TEST_CASE("gguf names: llama.cpp's q/k row permutation") {
  // convert_hf_to_gguf.py's permute: w.reshape(heads, 2, half, cols).swapaxes(1, 2), so one head of
  // 4 rows (half 2) is stored as Hugging Face's rows 0, 2, 1, 3; 2-byte rows here.
  const std::vector<unsigned char> hf = {0, 0, 1, 1, 2, 2, 3, 3};
  const std::vector<unsigned char> gguf = {0, 0, 2, 2, 1, 1, 3, 3};
  CHECK(rill::gguf::permute_rows(hf.data(), 4, 2, 1) == gguf);
  CHECK(rill::gguf::unpermute_rows(gguf.data(), 4, 2, 1) == hf);
  // Two heads of 6 rows each: every head moved on its own, and the two directions are inverses.
  std::vector<unsigned char> rows(12);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<unsigned char>(i);
  const std::vector<unsigned char> permuted = rill::gguf::permute_rows(rows.data(), 12, 1, 2);
  CHECK(permuted == std::vector<unsigned char>{0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11});
  CHECK(rill::gguf::unpermute_rows(permuted.data(), 12, 1, 2) == rows);
}
