// The object behind rill_lm, shared by the files of the language-model
// runtime: loading a Hugging Face folder and computing logits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hf_config.h"
#include "io/safetensors.h"
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

namespace rill::lm {

bool ends_with(const std::string& text, std::string_view suffix);

// Creates a tensor of the source's shape in dtype and fills it from the
// mapped file, converting a bounded number of elements at a time (never a
// second full copy of an embedding table); a table stored as given is read
// in place where source.owner allows it (tensor_from_host).
rill_status store_table(const std::string& where, rill_context& ctx, rill_dtype dtype,
                        const io::SafetensorsTensor& source, rill_dtype source_dtype, rill_tensor*& out);

// The dtype weight matrices are stored in: options' weight_format when it
// is a block dtype, else the compute dtype.
rill_dtype matrix_dtype(const rill_lm_load_options& options, rill_dtype compute);

// RILL_ERROR_UNSUPPORTED, naming the tensor, its dtype and the backend, when
// the backend cannot run lm's block weights: the decoder's and the head's
// (gemm), the embedding's (get_rows). where prefixes the tensor names.
rill_status check_block_support(const char* fn, const rill_lm& lm, const std::string& where);

// The family's names for decoder weights, as aliases of rill's.
void add_family_names(rill_model& model, const HfConfig& config);

// Frees everything lm holds; NULL is a no-op.
void destroy_lm(rill_lm* lm);

struct LmDeleter {
  void operator()(rill_lm* lm) const { destroy_lm(lm); }
};

// rill_lm_load on a .gguf file (gguf_load.cpp).
rill_status load_gguf(const char* fn, rill_context& ctx, const std::string& path,
                      const rill_lm_load_options& options, rill_lm*& out);

}  // namespace rill::lm
