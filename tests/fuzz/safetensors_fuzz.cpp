// The safetensors reader: any bytes as a file loaded into a small model.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_support.h"
#include "safetensors_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rill_fuzz::write_scratch_file("model.safetensors", data, size);
  const rill_model_desc desc = rill_fuzz::small_model_desc();
  rill_model* model = nullptr;
  if (rill_model_create(rill_fuzz::cpu_context(), &desc, &model) != RILL_OK) {
    std::fprintf(stderr, "rill fuzz: the small model cannot be created: %s\n", rill_last_error());
    std::abort();
  }
  (void)rill_model_load_safetensors(model, path.c_str());
  (void)rill_model_check_weights(model);
  rill_model_destroy(model);
  return 0;
}
