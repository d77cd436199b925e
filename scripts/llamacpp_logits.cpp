// llama.cpp's logits for scripts/check-llamacpp.sh (built there against the cached llama.cpp
// build, not part of rill's build):
//
//   llamacpp_logits MODEL.gguf "ID ID ..." OUT.f32
//
// loads MODEL.gguf with llama.cpp's own loader, runs the ids as one batch at positions 0..T-1
// with logits for every position, and writes them to OUT.f32 as raw float32, T rows of the
// vocabulary. The KV cache is kept in f32 so that the comparison sees the weights and the
// kernels, not llama.cpp's default f16 cache.
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "llamacpp_logits: %s\n", message.c_str());
  return 1;
}

void quiet_log(ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return fail("usage: llamacpp_logits MODEL.gguf \"ID ID ...\" OUT.f32");
  std::vector<llama_token> ids;
  std::istringstream id_text(argv[2]);
  for (long id; id_text >> id;) ids.push_back(static_cast<llama_token>(id));
  if (ids.empty() || !id_text.eof()) return fail(std::string("ids: expected integers, got '") + argv[2] + "'");

  llama_log_set(quiet_log, nullptr);
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) return fail(std::string("llama.cpp could not load ") + argv[1]);
  const int32_t tokens = static_cast<int32_t>(ids.size());
  llama_context_params params = llama_context_default_params();
  params.n_ctx = params.n_batch = params.n_ubatch = static_cast<uint32_t>(tokens);
  params.n_threads = params.n_threads_batch = 2;
  params.type_k = params.type_v = GGML_TYPE_F32;
  llama_context* ctx = llama_init_from_model(model, params);
  if (ctx == nullptr) return fail("llama.cpp could not make a context");
  const int32_t vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

  llama_batch batch = llama_batch_init(tokens, 0, 1);
  for (int32_t t = 0; t < tokens; ++t) {
    if (ids[t] < 0 || ids[t] >= vocab) return fail("id " + std::to_string(ids[t]) + " is outside the vocabulary");
    batch.token[t] = ids[t];
    batch.pos[t] = t;
    batch.n_seq_id[t] = 1;
    batch.seq_id[t][0] = 0;
    batch.logits[t] = 1;
  }
  batch.n_tokens = tokens;
  if (llama_decode(ctx, batch) != 0) return fail("llama_decode failed");

  std::FILE* out = std::fopen(argv[3], "wb");
  if (out == nullptr) return fail(std::string("cannot write ") + argv[3]);
  for (int32_t t = 0; t < tokens; ++t) {
    if (std::fwrite(llama_get_logits_ith(ctx, t), sizeof(float), vocab, out) != static_cast<size_t>(vocab)) {
      return fail(std::string("writing ") + argv[3] + " failed");
    }
  }
  if (std::fclose(out) != 0) return fail(std::string("writing ") + argv[3] + " failed");
  std::printf("llama.cpp: %d tokens, vocab %d\n", tokens, vocab);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
