// `rill quantize`'s Hugging Face folder reader: config.json and tokenizer.json
// (the input split at its first NUL byte) in a folder of their own, read into
// GGUF metadata. The folder has no checkpoint, so a read that gets past both
// files ends at the missing model.safetensors.
#include <cstring>
#include <filesystem>
#include <string>

#include "fuzz_support.h"
#include "cli/quantize_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t config_bytes = nul != nullptr ? static_cast<size_t>(nul - data) : size;
  const std::string config = rill_fuzz::write_scratch_file("config.json", data, config_bytes);
  const size_t rest = nul != nullptr ? size - config_bytes - 1 : 0;
  rill_fuzz::write_scratch_file("tokenizer.json", nul != nullptr ? nul + 1 : data, rest);
  rill::gguf::Writer writer;
  rill_cli::QuantizeSource source;
  std::string error;
  (void)rill_cli::read_hf_source(std::filesystem::path(config).parent_path().string(), writer, source, error);
  return 0;
}
