// The Hugging Face config reader: any bytes as a folder's config.json (and,
// from the same input, its generation_config.json) through rill_lm_load. The
// folder holds no weights, so a config it accepts ends at the missing
// model.safetensors.
#include <algorithm>
#include <cstdio>
#include <string>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte says how many of the last bytes are generation_config.json
  // (0: none).
  rill_fuzz::FuzzInput input(data, size);
  const size_t generation_bytes = input.byte();
  std::string config = input.rest();
  const std::string generation = config.substr(config.size() - std::min(generation_bytes, config.size()));
  config.resize(config.size() - generation.size());
  const std::string folder = rill_fuzz::scratch_dir();
  rill_fuzz::write_scratch_file("config.json", config.data(), config.size());
  const std::string generation_path = folder + "/generation_config.json";
  if (generation_bytes > 0) {
    rill_fuzz::write_scratch_file("generation_config.json", generation.data(), generation.size());
  } else {
    std::remove(generation_path.c_str());
  }
  rill_lm* lm = nullptr;
  if (rill_lm_load(rill_fuzz::cpu_context(), folder.c_str(), nullptr, &lm) == RILL_OK) rill_lm_destroy(lm);
  return 0;
}
