// The tokenizer.json reader: any bytes as the file; a tokenizer it accepts
// then encodes a text taken from the input and decodes the ids back.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte says how many of the last bytes are the text to encode.
  rill_fuzz::FuzzInput input(data, size);
  const size_t text_bytes = input.byte();
  std::string json = input.rest();
  const std::string text = json.substr(json.size() - std::min(text_bytes, json.size()));
  json.resize(json.size() - text.size());
  const std::string path = rill_fuzz::write_scratch_file("tokenizer.json", json.data(), json.size());
  rill_tokenizer* tokenizer = nullptr;
  if (rill_tokenizer_load(path.c_str(), &tokenizer) != RILL_OK) return 0;
  size_t count = 0;
  if (rill_tokenizer_encode(tokenizer, text.data(), text.size(), 1, nullptr, 0, &count) == RILL_OK) {
    std::vector<int32_t> ids(count);
    if (rill_tokenizer_encode(tokenizer, text.data(), text.size(), 1, ids.data(), ids.size(), &count) != RILL_OK) {
      std::fprintf(stderr, "encode refused the capacity it asked for: %s\n", rill_last_error());
      std::abort();
    }
    size_t required = 0;
    if (rill_tokenizer_decode(tokenizer, ids.data(), count, 0, nullptr, 0, &required) == RILL_OK) {
      std::string decoded(required, '\0');
      if (rill_tokenizer_decode(tokenizer, ids.data(), count, 0, decoded.data(), decoded.size(), &required) != RILL_OK) {
        std::fprintf(stderr, "decode refused the size it asked for: %s\n", rill_last_error());
        std::abort();
      }
    }
  }
  rill_tokenizer_destroy(tokenizer);
  return 0;
}
