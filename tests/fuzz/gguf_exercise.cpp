#include "gguf_exercise.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "gguf_reader.h"

namespace rill_fuzz {
namespace {

// Sums what it reads so that no read can be optimised away.
volatile uint64_t g_sink = 0;

void read_value(const rill::gguf::Value& value) {
  uint64_t u = 0;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::string_view s;
  g_sink = g_sink + value.as_u64(u) + value.as_i64(i) + value.as_f64(d) + value.as_bool(b) + value.as_string(s);
  if (!s.empty()) g_sink = g_sink + static_cast<unsigned char>(s.front()) + static_cast<unsigned char>(s.back());
  if (value.type() != rill::gguf::ValueType::ARRAY) return;
  // One past the end as well: the accessors must refuse it.
  for (uint64_t e = 0; e <= value.size(); ++e) {
    g_sink = g_sink + value.element_i64(e, i) + value.element_f64(e, d) + value.element_string(e, s);
    if (!s.empty()) g_sink = g_sink + static_cast<unsigned char>(s.back());
  }
}

}  // namespace

void exercise_gguf(const unsigned char* bytes, size_t size) {
  rill::gguf::Contents contents;
  std::string error;
  if (rill::gguf::parse(bytes, size, contents, error) != RILL_OK) return;
  for (const auto& kv : contents.metadata) {
    if (!kv.key.empty()) g_sink = g_sink + static_cast<unsigned char>(kv.key.back());
    read_value(kv.value);
  }
  for (const auto& tensor : contents.tensors) {
    if (tensor.bytes > 0) g_sink = g_sink + tensor.data[0] + tensor.data[tensor.bytes - 1];
    g_sink = g_sink + (contents.find_tensor(tensor.name) != nullptr);
  }

  const std::string path = write_scratch_file("model.gguf", bytes, size);
  rill_tokenizer* tokenizer = nullptr;
  if (rill_tokenizer_load(path.c_str(), &tokenizer) == RILL_OK) rill_tokenizer_destroy(tokenizer);
  rill_lm* lm = nullptr;
  if (rill_lm_load(cpu_context(), path.c_str(), nullptr, &lm) == RILL_OK) rill_lm_destroy(lm);
}

}  // namespace rill_fuzz
