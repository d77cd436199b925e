// The object behind rill_lm, shared by the files of the language-model
// runtime: loading a Hugging Face folder and computing logits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hf_config.h"
#include "objects.h"

struct rill_lm {
  rill_context* context = nullptr;
  rill_model* model = nullptr;          // the decoder stack, final norm included
  rill_tensor* embedding = nullptr;     // [vocab, hidden] in the model dtype
  rill_tensor* lm_head = nullptr;       // [vocab, hidden]; the embedding itself when tied
  rill_tensor* head_bias = nullptr;     // [vocab] (Phi-2), or NULL
  rill::lm::HfConfig config;
  rill_dtype dtype = RILL_DTYPE_F32;
};
