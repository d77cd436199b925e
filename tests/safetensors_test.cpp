// The safetensors reader behind rill_model_load_safetensors: files written
// here byte by byte, valid ones (F32/F16/BF16 converted to the model dtype)
// and each way a file can be corrupt, which must be RILL_ERROR_IO naming the
// file and, where one is at fault, the tensor.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rill.h"
#include "safetensors_file.h"
#include "test_helpers.h"

namespace {

using rill_test::expect_failure;

std::string temp_path(const char* name) { return rill_test::scratch_path("rill_safetensors_test_", name); }

// Writes the header and the data as a safetensors file, less its last truncate bytes.
std::string write_file(const char* name, const std::string& header, const std::vector<unsigned char>& data,
                       size_t truncate = 0) {
  std::string bytes = rill_test::safetensors_bytes(header, std::string(data.begin(), data.end()));
  bytes.resize(bytes.size() - truncate);
  const std::string path = temp_path(name);
  rill_test::write_text_file(path, bytes);
  return path;
}

std::vector<unsigned char> raw(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  return std::vector<unsigned char>(b, b + n);
}

// A one-layer model whose only weights, for the tests, are [4] norms plus
// [4, 4] projections (hidden 4, 1 head of 4, intermediate 4, plain ReLU MLP).
rill_model_desc tiny_desc(rill_dtype dtype) {
  rill_model_desc d;
  rill_model_desc_init(&d);
  d.dtype = dtype;
  d.num_layers = 1;
  d.hidden_size = 4;
  d.num_heads = 1;
  d.intermediate_size = 4;
  d.activation = RILL_MLP_RELU;
  d.final_norm = 0;
  return d;
}

const char* const kNames[] = {
    "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
    "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
    "model.layers.0.mlp.up_proj.weight",      "model.layers.0.mlp.down_proj.weight",
    "model.layers.0.input_layernorm.weight",  "model.layers.0.post_attention_layernorm.weight"};

// A header entry (a short name for the tables below).
const auto entry = rill_test::safetensors_entry;

struct Model {
  rill_context* ctx = nullptr;
  rill_model* model = nullptr;
  explicit Model(const rill_model_desc& d = tiny_desc(RILL_DTYPE_F32)) {
    REQUIRE(rill_context_create("[runtime]\nbackend = \"cpu\"\n", &ctx) == RILL_OK);
    REQUIRE(rill_model_create(ctx, &d, &model) == RILL_OK);
  }
  ~Model() {
    rill_model_destroy(model);
    rill_context_destroy(ctx);
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  std::vector<float> run(const std::vector<float>& x) {
    const int64_t shape[3] = {1, 2, 4};
    rill_tensor* h = nullptr;
    REQUIRE(rill_tensor_create(ctx, RILL_DTYPE_F32, 3, shape, &h) == RILL_OK);
    REQUIRE(rill_tensor_write_f32(h, x.data(), x.size()) == RILL_OK);
    REQUIRE_MESSAGE(rill_model_forward(model, nullptr, h, nullptr, 0) == RILL_OK, rill_last_error());
    std::vector<float> out(x.size());
    REQUIRE(rill_tensor_read_f32(h, out.data(), out.size()) == RILL_OK);
    rill_tensor_destroy(h);
    return out;
  }
};

// Values exact in f16 and bf16: multiples of 1/8 in [-1, 1].
float value(size_t tensor, size_t i) {
  return static_cast<float>(static_cast<int>((tensor * 7 + i * 3) % 17) - 8) / 8.0f;
}

}  // namespace

// Writes the 8 weights of tiny_desc as F16 (projections) and BF16 (norms),
// loads them into an f32 model and checks it against the same weights set from
// host memory. lead: bytes of a U8 tensor stored before them, so that an odd
// lead puts every 16-bit tensor at an odd address of the mapping.
static void check_mixed_file_loads(const char* name, size_t lead) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"},";
  std::vector<unsigned char> data(lead, 0);
  if (lead > 0) header += "\"lead\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(lead) +
                          "],\"data_offsets\":[0," + std::to_string(lead) + "]},";
  for (size_t t = 0; t < 8; ++t) {
    const bool norm = t >= 6;
    const size_t count = norm ? 4 : 16;
    std::vector<uint16_t> halves(count);
    for (size_t i = 0; i < count; ++i) {
      const float v = norm ? 1.0f + value(t, i) / 4 : value(t, i);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      if (norm) {
        halves[i] = static_cast<uint16_t>(bits >> 16);  // exact: the low bits are zero
      } else {
        // f16 of a multiple of 1/8 in [-1, 1]: exact, built from the f32 exponent.
        const uint32_t sign = (bits >> 16) & 0x8000u;
        const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
        halves[i] =
            v == 0.0f ? 0
                      : static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) | ((bits >> 13) & 0x3ffu));
      }
    }
    const size_t begin = data.size();
    const auto bytes = raw(halves.data(), count * 2);
    data.insert(data.end(), bytes.begin(), bytes.end());
    header += (t ? "," : "") + entry(kNames[t], norm ? "BF16" : "F16", norm ? "[4]" : "[4,4]", begin, data.size());
  }
  header += ",\"unused.tensor\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[" + std::to_string(data.size()) +
            "," + std::to_string(data.size() + 8) + "]}}";
  data.resize(data.size() + 8, 0);
  // Trailing spaces (allowed by the format) keep the data section at an even offset.
  if (header.size() % 2 != 0) header += ' ';
  const std::string path = write_file(name, header, data);

  Model from_file, from_memory;
  REQUIRE_MESSAGE(rill_model_load_safetensors(from_file.model, path.c_str()) == RILL_OK, rill_last_error());
  for (size_t t = 0; t < 8; ++t) {
    const bool norm = t >= 6;
    std::vector<float> v(norm ? 4 : 16);
    for (size_t i = 0; i < v.size(); ++i) v[i] = norm ? 1.0f + value(t, i) / 4 : value(t, i);
    const int64_t shape[2] = {4, 4};
    const int64_t* dims = norm ? shape + 1 : shape;
    REQUIRE(rill_model_set_weight(from_memory.model, kNames[t], RILL_DTYPE_F32, norm ? 1 : 2, dims, v.data(),
                                  v.size() * 4) == RILL_OK);
  }
  const std::vector<float> x = {0.5f, -1.0f, 0.25f, 2.0f, 1.0f, 0.0f, -0.5f, 0.75f};
  CHECK(from_file.run(x) == from_memory.run(x));
  std::remove(path.c_str());
}

TEST_CASE("F32, F16 and BF16 tensors load as the values set from host memory") {
  check_mixed_file_loads("mixed.safetensors", 0);
}

TEST_CASE("16-bit tensors at odd offsets of the file load like aligned ones") {
  // The format does not require alignment; a writer may place a BF16 tensor
  // right after a 1-byte one.
  check_mixed_file_loads("mixed_odd.safetensors", 1);
}

TEST_CASE("corrupt files are RILL_ERROR_IO naming the file and tensor") {
  Model m;
  const std::string q = kNames[0];
  const std::vector<unsigned char> data(64, 0);
  struct Case {
    const char* name;
    std::string header;
    size_t truncate;
    std::vector<std::string> parts;
    rill_status status;
  };
  const std::vector<Case> cases = {
      {"not_json", "{\"a\": [1, 2", 0, {"JSON"}, RILL_ERROR_IO},
      {"number_overflow", "{" + entry(q, "F32", "[4,4]", 0, 64) + ",\"__metadata__\":{\"x\":1e706}}", 0,
       {"not valid JSON", "1e706"}, RILL_ERROR_IO},
      {"not_object", "[1, 2]", 0, {"not a JSON object"}, RILL_ERROR_IO},
      {"no_dtype", "{\"" + q + "\":{\"shape\":[4,4],\"data_offsets\":[0,64]}}", 0, {q, "dtype"}, RILL_ERROR_IO},
      {"unknown_dtype", "{" + entry(q, "F31", "[4,4]", 0, 64) + "}", 0, {q, "F31"}, RILL_ERROR_IO},
      {"negative_dim", "{" + entry(q, "F32", "[-4,4]", 0, 64) + "}", 0, {q, "shape"}, RILL_ERROR_IO},
      {"end_before_begin", "{" + entry(q, "F32", "[4,4]", 64, 0) + "}", 0, {q, "before"}, RILL_ERROR_IO},
      {"size_mismatch", "{" + entry(q, "F32", "[4,4]", 0, 32) + "}", 0, {q, "32 bytes", "64"}, RILL_ERROR_IO},
      {"truncated", "{" + entry(q, "F32", "[4,4]", 0, 64) + "}", 4, {q, "truncated"}, RILL_ERROR_IO},
      {"overlap",
       "{" + entry(q, "F32", "[2,4]", 0, 32) + "," + entry(kNames[1], "F32", "[2,4]", 16, 48) + "}",
       0,
       {q, kNames[1], "overlap"},
       RILL_ERROR_IO},
      {"int_dtype", "{" + entry(q, "I32", "[4,4]", 0, 64) + "}", 0, {q, "I32"}, RILL_ERROR_IO},
      {"wrong_shape", "{" + entry(q, "F32", "[2,8]", 0, 64) + "}", 0, {q, "[4, 4]", "[2, 8]"}, RILL_ERROR_SHAPE},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string path = write_file(c.name, c.header, data, c.truncate);
    std::vector<std::string> parts = c.parts;
    parts.push_back(path);
    expect_failure(rill_model_load_safetensors(m.model, path.c_str()), c.status, parts);
    std::remove(path.c_str());
  }

  // Shorter than the length field, and a length past the end of the file.
  const std::string tiny = temp_path("tiny.safetensors");
  std::FILE* f = std::fopen(tiny.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fputs("abc", f);
  std::fclose(f);
  expect_failure(rill_model_load_safetensors(m.model, tiny.c_str()), RILL_ERROR_IO, {tiny, "truncated"});
  std::remove(tiny.c_str());
  const std::string long_header = write_file("long_header.safetensors", "{}", {}, 0);
  f = std::fopen(long_header.c_str(), "r+b");
  REQUIRE(f != nullptr);
  std::fputc(0x40, f);  // header length 64, but only 2 bytes follow
  std::fclose(f);
  expect_failure(rill_model_load_safetensors(m.model, long_header.c_str()), RILL_ERROR_IO, {long_header, "truncated"});
  std::remove(long_header.c_str());

  // A named pipe with no writer: refused at once, not waited on for ever.
  const std::string fifo = temp_path("fifo.safetensors");
  std::remove(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  expect_failure(rill_model_load_safetensors(m.model, fifo.c_str()), RILL_ERROR_IO, {fifo, "not a regular file"});
  std::remove(fifo.c_str());
}

// A file of F32 tensors: each a name, a shape and its values.
struct Tensor {
  std::string name;
  std::string shape;  // "[12,4]"
  std::vector<float> values;
};

static std::string write_f32_file(const char* name, const std::vector<Tensor>& tensors) {
  std::string header = "{";
  std::vector<unsigned char> data;
  for (const Tensor& t : tensors) {
    const size_t begin = data.size();
    const auto bytes = raw(t.values.data(), t.values.size() * 4);
    data.insert(data.end(), bytes.begin(), bytes.end());
    header += (begin ? "," : "") + entry(t.name, "F32", t.shape, begin, data.size());
  }
  return write_file(name, header + "}", data);
}

static std::vector<float> values(size_t tensor, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = value(tensor, i);
  return v;
}

TEST_CASE("GPT-NeoX names and a fused query_key_value load as rill's weights") {
  // One head, so the per-head interleave [q; k; v] is also the block order;
  // the per-head split itself is checked against transformers' GPT-NeoX in
  // tests/torch (the parallel group).
  const std::string l = "gpt_neox.layers.0.";
  std::vector<float> qkv = values(0, 12 * 4);
  const std::string path = write_f32_file(
      "neox.safetensors",
      {{l + "attention.query_key_value.weight", "[12,4]", qkv},
       {l + "attention.dense.weight", "[4,4]", values(3, 16)},
       {l + "mlp.dense_h_to_4h.weight", "[4,4]", values(4, 16)},
       {l + "mlp.dense_4h_to_h.weight", "[4,4]", values(5, 16)},
       {l + "input_layernorm.weight", "[4]", {1.0f, 0.5f, 1.5f, 1.0f}},
       {l + "post_attention_layernorm.weight", "[4]", {0.75f, 1.0f, 1.25f, 1.0f}},
       {"gpt_neox.embed_in.weight", "[2,4]", values(6, 8)}});  // not a layer weight: skipped
  Model from_file, from_memory;
  REQUIRE_MESSAGE(rill_model_load_safetensors(from_file.model, path.c_str()) == RILL_OK, rill_last_error());
  const int64_t matrix[2] = {4, 4}, vector[1] = {4};
  const std::vector<float> norm1 = {1.0f, 0.5f, 1.5f, 1.0f}, norm2 = {0.75f, 1.0f, 1.25f, 1.0f};
  const std::vector<float> o = values(3, 16), up = values(4, 16), down = values(5, 16);
  const std::pair<const char*, const float*> set[] = {
      {kNames[0], qkv.data()}, {kNames[1], qkv.data() + 16}, {kNames[2], qkv.data() + 32}, {kNames[3], o.data()},
      {kNames[4], up.data()},  {kNames[5], down.data()},     {kNames[6], norm1.data()},    {kNames[7], norm2.data()}};
  for (const auto& [name, data] : set) {
    const bool norm = std::strstr(name, "layernorm") != nullptr;
    REQUIRE_MESSAGE(rill_model_set_weight(from_memory.model, name, RILL_DTYPE_F32, norm ? 1 : 2,
                                          norm ? vector : matrix, data, (norm ? 4 : 16) * 4) == RILL_OK,
                    rill_last_error());
  }
  const std::vector<float> x = {0.5f, -1.0f, 0.25f, 2.0f, 1.0f, 0.0f, -0.5f, 0.75f};
  CHECK(from_file.run(x) == from_memory.run(x));
  std::remove(path.c_str());
}

TEST_CASE("fused tensors: a wrong shape, a fused tensor beside its parts, one the model cannot use") {
  const std::string l = "model.layers.0.";
  const std::string qkv = l + "self_attn.qkv_proj.weight";
  struct Case {
    const char* file;
    std::vector<Tensor> tensors;
    rill_status status;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"fused_shape", {{qkv, "[8,4]", values(0, 32)}}, RILL_ERROR_SHAPE, {qkv, "[12, 4]", "[8, 4]"}},
      {"fused_and_part",
       {{kNames[1], "[4,4]", values(1, 16)}, {qkv, "[12,4]", values(0, 48)}},
       RILL_ERROR_INVALID_ARGUMENT,
       {kNames[1], qkv, "both hold"}},
      {"alias_and_name",
       {{kNames[3], "[4,4]", values(1, 16)}, {"gpt_neox.layers.0.attention.dense.weight", "[4,4]", values(2, 16)}},
       RILL_ERROR_INVALID_ARGUMENT,
       {kNames[3], "gpt_neox.layers.0.attention.dense.weight", "both hold"}},
      {"gate_up_not_gated",
       {{kNames[0], "[4,4]", values(1, 16)}, {l + "mlp.gate_up_proj.weight", "[8,4]", values(0, 32)}},
       RILL_ERROR_INVALID_ARGUMENT,
       {l + "mlp.gate_up_proj.weight", "cannot use", "no gate", "RILL_MLP_RELU"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    Model m;
    const std::string path = write_f32_file(c.file, c.tensors);
    std::vector<std::string> parts = c.parts;
    parts.push_back(path);
    expect_failure(rill_model_load_safetensors(m.model, path.c_str()), c.status, parts);
    // All or nothing: the tensors checked before the failure were not stored either.
    expect_failure(rill_model_check_weights(m.model), RILL_ERROR_NOT_FOUND, {kNames[0]});
    std::remove(path.c_str());
  }
}

TEST_CASE("a failed load leaves the model exactly as it was") {
  // The first file sets every weight; the second holds other values with one
  // bad tensor in the middle (a wrong shape, then a wrong dtype). The model
  // must compute what it computed before the failed load, bit for bit.
  std::vector<Tensor> first, second;
  for (size_t t = 0; t < 8; ++t) {
    const bool norm = t >= 6;
    first.push_back({kNames[t], norm ? "[4]" : "[4,4]", values(t, norm ? 4 : 16)});
    second.push_back({kNames[t], norm ? "[4]" : "[4,4]", values(t + 3, norm ? 4 : 16)});
  }
  Model model, other;
  const std::string loaded = write_f32_file("first.safetensors", first);
  REQUIRE(rill_model_load_safetensors(model.model, loaded.c_str()) == RILL_OK);
  const std::string good = write_f32_file("second.safetensors", second);
  REQUIRE(rill_model_load_safetensors(other.model, good.c_str()) == RILL_OK);
  const std::vector<float> x = {0.5f, -1.0f, 0.25f, 2.0f, 1.0f, 0.0f, -0.5f, 0.75f};
  const std::vector<float> before = model.run(x);
  REQUIRE(before != other.run(x));  // the control: loading the second file changes the output

  second[4].shape = "[2,8]";
  const std::string bad_shape = write_f32_file("bad_shape.safetensors", second);
  expect_failure(rill_model_load_safetensors(model.model, bad_shape.c_str()), RILL_ERROR_SHAPE,
                 {bad_shape, kNames[4], "expected shape [4, 4], got [2, 8]"});
  CHECK(model.run(x) == before);

  second[4].shape = "[4,4]";
  std::string header = "{";
  std::vector<unsigned char> data;
  for (size_t t = 0; t < 8; ++t) {
    const size_t begin = data.size();
    const auto bytes = raw(second[t].values.data(), second[t].values.size() * 4);
    data.insert(data.end(), bytes.begin(), bytes.end());
    header += (t ? "," : "") + entry(second[t].name, t == 4 ? "I32" : "F32", second[t].shape, begin, data.size());
  }
  const std::string bad_dtype = write_file("bad_dtype.safetensors", header + "}", data);
  expect_failure(rill_model_load_safetensors(model.model, bad_dtype.c_str()), RILL_ERROR_IO,
                 {bad_dtype, kNames[4], "dtype I32 is not supported"});
  CHECK(model.run(x) == before);

  // A truncated file: the whole header is read, then its data end is refused.
  const std::string truncated = write_file("truncated.safetensors", header + "}", data, 8);
  CHECK(rill_model_load_safetensors(model.model, truncated.c_str()) == RILL_ERROR_IO);
  CHECK(model.run(x) == before);
  for (const std::string& path : {loaded, good, bad_shape, bad_dtype, truncated}) std::remove(path.c_str());
}

TEST_CASE("per-head QK norm tensors (StableLM 2 12B) stack into q_norm and k_norm, all heads or none") {
  // tiny_desc with 2 query heads and 1 KV head of 2 dims and a weight per head.
  rill_model_desc d = tiny_desc(RILL_DTYPE_F32);
  d.num_heads = 2;
  d.num_kv_heads = 1;
  d.qk_norm = RILL_QK_NORM_HEAD_WEIGHTS;
  const std::string a = "model.layers.0.self_attn.";
  std::vector<Tensor> common;
  for (size_t t = 0; t < 8; ++t) {
    const bool norm = t >= 6, kv = t == 1 || t == 2;
    common.push_back({kNames[t], norm ? "[4]" : kv ? "[2,4]" : "[4,4]", values(t, norm ? 4 : kv ? 8 : 16)});
  }
  const std::vector<float> q0 = {1.25f, 0.5f}, q1 = {0.75f, -1.0f}, k0 = {1.5f, 0.25f};
  auto with = [&](std::vector<Tensor> extra) {
    std::vector<Tensor> all = common;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  const std::string per_head = write_f32_file(
      "per_head.safetensors", with({{a + "q_layernorm.norms.0.weight", "[2]", q0},
                                    {a + "q_layernorm.norms.1.weight", "[2]", q1},
                                    {a + "k_layernorm.norms.0.weight", "[2]", k0}}));
  auto stacked_file = [&](const char* name, const std::vector<float>& first, const std::vector<float>& second) {
    std::vector<float> q = first;
    q.insert(q.end(), second.begin(), second.end());
    return write_f32_file(name, with({{a + "q_norm.weight", "[2,2]", q}, {a + "k_norm.weight", "[1,2]", k0}}));
  };
  const std::string stacked = stacked_file("stacked.safetensors", q0, q1);
  const std::string reversed = stacked_file("reversed.safetensors", q1, q0);
  const std::string missing = write_f32_file(
      "missing_head.safetensors",
      with({{a + "q_layernorm.norms.1.weight", "[2]", q1}, {a + "k_layernorm.norms.0.weight", "[2]", k0}}));
  auto run = [&](const std::string& path) {
    Model m(d);
    REQUIRE_MESSAGE(rill_model_load_safetensors(m.model, path.c_str()) == RILL_OK, rill_last_error());
    return m.run({0.5f, -1.0f, 0.25f, 2.0f, 1.0f, 0.0f, -0.5f, 0.75f});
  };
  const std::vector<float> expected = run(stacked);
  CHECK(run(per_head) == expected);
  CHECK(run(reversed) != expected);  // the control: the heads' order matters

  Model m(d);
  expect_failure(rill_model_load_safetensors(m.model, missing.c_str()), RILL_ERROR_IO,
                 {missing, a + "q_layernorm.norms.0.weight", "head 0 of 2", a + "q_norm.weight"});
  expect_failure(rill_model_check_weights(m.model), RILL_ERROR_NOT_FOUND, {kNames[0]});  // nothing was stored
  const int64_t head[1] = {2};
  expect_failure(rill_model_set_weight(m.model, (a + "k_layernorm.norms.0.weight").c_str(), RILL_DTYPE_F32, 1, head,
                                       k0.data(), 8),
                 RILL_ERROR_NOT_FOUND, {a + "k_norm.weight", "[1, 2]", "every head stacked"});
  for (const std::string& path : {per_head, stacked, reversed, missing}) std::remove(path.c_str());
}
