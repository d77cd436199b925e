// The GGUF reader, structure-aware: the input chooses a file that is GGUF of
// the right form (magic, version, counts, metadata of a small llama model and
// its tokenizer, tensor infos with llama's names, the aligned data section)
// with the counts, string lengths, value and tensor types, dimensions,
// offsets and general.alignment drawn near the right ones and at the edges of
// their ranges, so the fuzzer spends its time on the reader's checks and on
// the model and tokenizer loaders rather than on getting the layout right.
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "gguf_exercise.h"

namespace {

// Usually expected; one time in `odds` a mutated one.
uint64_t near(rill_fuzz::FuzzInput& in, uint64_t expected, unsigned odds = 8) {
  return in.byte() % odds == 0 ? in.mutated(expected) : expected;
}

class Writer {
 public:
  explicit Writer(rill_fuzz::FuzzInput& in) : in_(in) {}
  void u32(uint64_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void string(const std::string& s) {
    u64(near(in_, s.size(), 16));
    bytes_ += s;
  }
  void type(uint32_t t) { u32(near(in_, t, 16)); }
  void pad_to(uint64_t alignment) {
    while (alignment > 0 && alignment <= 4096 && bytes_.size() % alignment != 0) bytes_.push_back('\0');
  }
  std::string& bytes() { return bytes_; }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  rill_fuzz::FuzzInput& in_;
  std::string bytes_;
};

constexpr uint32_t kU32 = 4, kI32 = 5, kF32 = 6, kString = 8, kArray = 9;  // value types

struct Tensor {
  const char* name;
  std::vector<uint64_t> dims;  // ggml order
};

// A llama model with one layer, width 8, feed-forward 16, vocabulary 16.
const std::vector<Tensor>& llama_tensors() {
  static const std::vector<Tensor> tensors = {
      {"token_embd.weight", {8, 16}},       {"output_norm.weight", {8}},
      {"output.weight", {8, 16}},           {"blk.0.attn_norm.weight", {8}},
      {"blk.0.attn_q.weight", {8, 8}},      {"blk.0.attn_k.weight", {8, 8}},
      {"blk.0.attn_v.weight", {8, 8}},      {"blk.0.attn_output.weight", {8, 8}},
      {"blk.0.ffn_norm.weight", {8}},       {"blk.0.ffn_gate.weight", {8, 16}},
      {"blk.0.ffn_up.weight", {8, 16}},     {"blk.0.ffn_down.weight", {16, 8}},
  };
  return tensors;
}

// F32, F16, BF16, Q8_0, Q4_K, and ids never assigned or retired.
const uint32_t kTensorTypes[] = {0, 1, 30, 8, 12, 4, 5, 39, 1000};

void write_u32_kv(Writer& w, const char* key, uint64_t value) {
  w.string(key);
  w.type(kU32);
  w.u32(value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rill_fuzz::FuzzInput in(data, size);
  Writer w(in);
  const auto& known = llama_tensors();
  const size_t tensor_count = in.byte() % (known.size() + 2);
  const uint64_t alignment = in.byte() % 8 == 0 ? in.mutated(32) : 32;
  const bool with_alignment = alignment != 32 || in.flag();
  const bool with_tokenizer = in.flag();
  const uint64_t kv_count = 10 + with_alignment + (with_tokenizer ? 3 : 0);

  w.bytes() = in.byte() % 32 == 0 ? "GGUG" : "GGUF";
  w.u32(near(in, in.flag() ? 3 : 2, 16));
  w.u64(near(in, tensor_count));
  w.u64(near(in, kv_count));

  w.string("general.architecture");
  w.type(kString);
  w.string(in.byte() % 16 == 0 ? "gpt-j" : "llama");
  write_u32_kv(w, "llama.block_count", near(in, 1));
  write_u32_kv(w, "llama.context_length", near(in, 32));
  write_u32_kv(w, "llama.embedding_length", near(in, 8));
  write_u32_kv(w, "llama.feed_forward_length", near(in, 16));
  write_u32_kv(w, "llama.attention.head_count", near(in, 2));
  write_u32_kv(w, "llama.attention.head_count_kv", near(in, 2));
  w.string("llama.attention.layer_norm_rms_epsilon");
  w.type(kF32);
  w.u32(near(in, 0x3727c5ac));  // 1e-5f
  write_u32_kv(w, "tokenizer.ggml.bos_token_id", near(in, 1));
  write_u32_kv(w, "general.file_type", near(in, 0));
  if (with_alignment) write_u32_kv(w, "general.alignment", alignment);
  if (with_tokenizer) {
    w.string("tokenizer.ggml.model");
    w.type(kString);
    w.string(in.flag() ? "gpt2" : "llama");
    const uint64_t vocab = 16;
    w.string("tokenizer.ggml.tokens");
    w.type(kArray);
    w.type(kString);
    w.u64(near(in, vocab));
    for (uint64_t t = 0; t < vocab; ++t) w.string(t < 4 ? std::string(1, static_cast<char>('a' + t)) : "t" + std::to_string(t));
    w.string("tokenizer.ggml.token_type");
    w.type(kArray);
    w.type(kI32);
    w.u64(near(in, vocab));
    for (uint64_t t = 0; t < vocab; ++t) w.u32(near(in, 1, 32));
  }

  uint64_t offset = 0;
  for (size_t t = 0; t < tensor_count; ++t) {
    const Tensor& tensor = known[t < known.size() ? t : in.pick(known.size())];
    w.string(tensor.name);
    const uint64_t n_dims = near(in, tensor.dims.size(), 16);
    w.u32(n_dims);
    uint64_t elements = 1;
    for (uint64_t d = 0; d < n_dims && d < 8; ++d) {
      const uint64_t dim = near(in, d < tensor.dims.size() ? tensor.dims[d] : 1);
      w.u64(dim);
      elements *= dim;
    }
    const uint32_t type = in.byte() % 4 == 0 ? kTensorTypes[in.pick(std::size(kTensorTypes))] : 0;
    w.u32(type);
    w.u64(near(in, offset));
    // The next tensor's offset as a writer would put it (sizes kept small).
    offset += ((type == 0 ? 4 : 2) * (elements & 0xffff) + 31) / 32 * 32;
  }
  w.pad_to(alignment);
  // The data section: what the offsets ask for, give or take, filled from the input.
  const uint64_t data_bytes = near(in, offset) % (uint64_t{1} << 16);
  const std::string fill = in.rest();
  for (uint64_t i = 0; i < data_bytes; ++i) w.bytes().push_back(fill.empty() ? '\0' : fill[i % fill.size()]);

  rill_fuzz::exercise_gguf(reinterpret_cast<const unsigned char*>(w.bytes().data()), w.bytes().size());
  return 0;
}
