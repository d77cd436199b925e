// The [model] TOML reader: any text through rill_model_desc_from_toml; a
// description it accepts must also be accepted by rill_model_create when its
// weights are small enough to allocate here.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  rill_model_desc desc;
  if (rill_model_desc_from_toml(text.c_str(), "fuzz.toml", &desc) != RILL_OK) return 0;
  // Weights are allocated as the model is created: keep to small models.
  const int64_t d = desc.hidden_size, i = desc.intermediate_size, layers = desc.num_layers;
  const int64_t experts = desc.num_experts > 0 ? desc.num_experts : 1;
  if (d > 256 || i > 1024 || layers > 4 || experts > 8 || desc.num_heads > 64 || desc.head_dim > 256 ||
      desc.moe_intermediate_size > 1024 || desc.shared_expert_intermediate_size > 1024) {
    return 0;
  }
  rill_model* model = nullptr;
  const rill_status status = rill_model_create(rill_fuzz::cpu_context(), &desc, &model);
  if (status != RILL_OK) {
    std::fprintf(stderr, "rill_model_create refused what rill_model_desc_from_toml accepted: %s\n", rill_last_error());
    std::abort();
  }
  rill_model_destroy(model);
  return 0;
}
