// `rill logits`: loads a Hugging Face model folder and writes the f32 logits
// of a sequence of token ids as .npy [T, vocab]. With --decode-from N the
// first N ids run as one prefill and each later id as a decode step against
// the KV cache, so the file compares prefill with decode.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "io/npy.h"
#include "rill.h"

namespace rill_cli {
namespace {

void print_help(std::FILE* to) {
  std::fprintf(to,
               "usage: rill logits --model PATH --ids \"1 2 3\" --output logits.npy [--backend NAME]\n"
               "                   [--dtype f32|f16|bf16] [--weight-format F] [--decode-from N]\n"
               "                   [--copy-weights]\n\n"
               "Loads the Hugging Face model folder PATH (config.json, model.safetensors or its sharded\n"
               "index; docs/MODELS.md) and writes the float32 logits of the T token ids, [T, vocab], to\n"
               "the .npy file.\n"
               "  --backend NAME     auto, cpu, cuda, vulkan or a plugin (default: auto)\n"
               "  --decode-from N    ids [0, N) run as one prefill, every later id as a decode step\n"
               "                     against the KV cache (0 <= N <= T); without it one prefill, no cache\n");
  LoadOptions::print_help(to, 21);
}

int fail(const std::string& message) {
  std::fprintf(stderr, "rill logits: %s\n", message.c_str());
  return 1;
}

int fail_status(const std::string& what, rill_status status) {
  return fail(what + ": " + rill_status_string(status) + ": " + rill_last_error());
}

struct Handles {
  rill_context* ctx = nullptr;
  rill_lm* lm = nullptr;
  rill_kv_cache* cache = nullptr;
  ~Handles() {
    rill_kv_cache_destroy(cache);
    rill_lm_destroy(lm);
    rill_context_destroy(ctx);
  }
};

}  // namespace

int logits_main(int argc, char** argv) {
  std::string model_path, ids_text, output_path;
  RuntimeOptions runtime;
  LoadOptions load;
  int decode_from = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (is_help_option(argv[i])) {
      print_help(stdout);
      return 0;
    }
    if (load.take(argc, argv, i)) continue;
    const bool takes_value = arg == "--model" || arg == "--ids" || arg == "--output" || arg == "--backend" ||
                             arg == "--dtype" || arg == "--weight-format" || arg == "--decode-from";
    if (!takes_value) {
      std::fprintf(stderr, "rill logits: unexpected argument '%s'\n", arg.c_str());
      print_help(stderr);
      return 2;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "rill logits: %s needs a value\n", arg.c_str());
      return 2;
    }
    if (arg == "--backend") {
      runtime.take(argc, argv, i);
    } else if (arg == "--decode-from") {
      if (!parse_int_option("logits", "--decode-from", argv[++i], 0, INT32_MAX, decode_from)) return 2;
    } else {
      (arg == "--model" ? model_path : arg == "--ids" ? ids_text : output_path) = argv[++i];
    }
  }
  for (const auto& [value, name] :
       {std::pair{&model_path, "--model"}, std::pair{&ids_text, "--ids"}, std::pair{&output_path, "--output"}}) {
    if (value->empty()) {
      std::fprintf(stderr, "rill logits: %s is required\n", name);
      print_help(stderr);
      return 2;
    }
  }
  if (output_overwrites_input("logits", {"--output", output_path}, {{"--model", model_path}})) return 2;
  rill_lm_load_options options;
  rill_lm_load_options_init(&options);
  if (!load.apply("logits", options)) return 2;
  std::vector<int32_t> ids;
  if (!parse_ids_option("logits", ids_text, ids)) return 2;
  const auto tokens = static_cast<int32_t>(ids.size());
  if (decode_from > tokens) {
    std::fprintf(stderr, "rill logits: --decode-from: expected at most the %d ids given, got %d\n", tokens,
                 decode_from);
    return 2;
  }
  std::string config;
  if (const int code = runtime.config_text("logits", config); code != 0) return code;

  Handles h;
  rill_status status = rill_context_create(config.c_str(), &h.ctx);
  if (status != RILL_OK) return fail_status("context", status);
  const auto load_start = std::chrono::steady_clock::now();
  status = rill_lm_load(h.ctx, model_path.c_str(), &options, &h.lm);
  if (status != RILL_OK) return fail_status("load", status);
  const double load_seconds = seconds_since(load_start);
  rill_lm_info info;
  info.struct_size = sizeof info;
  status = rill_lm_get_info(h.lm, &info);
  if (status != RILL_OK) return fail_status("info", status);

  const auto vocab = static_cast<size_t>(info.vocab_size);
  std::vector<float> logits(ids.size() * vocab);
  const auto start = std::chrono::steady_clock::now();
  if (decode_from < 0) {
    status = rill_lm_logits(h.lm, nullptr, 1, tokens, ids.data(), 0, logits.data(), logits.size());
    if (status != RILL_OK) return fail_status("prefill", status);
  } else {
    status = rill_kv_cache_create(rill_lm_model(h.lm), 1, tokens, &h.cache);
    if (status != RILL_OK) return fail_status("KV cache", status);
    if (decode_from > 0) {
      status = rill_lm_logits(h.lm, h.cache, 1, decode_from, ids.data(), 0, logits.data(),
                              static_cast<size_t>(decode_from) * vocab);
      if (status != RILL_OK) return fail_status("prefill", status);
    }
    for (int32_t t = decode_from; t < tokens; ++t) {
      status = rill_lm_logits(h.lm, h.cache, 1, 1, &ids[static_cast<size_t>(t)], 0,
                              logits.data() + static_cast<size_t>(t) * vocab, vocab);
      if (status != RILL_OK) return fail_status("decode step at token " + std::to_string(t), status);
    }
  }
  const double run_seconds = seconds_since(start);
  std::string error;
  if (!rill::io::write_npy_f32(output_path, {tokens, info.vocab_size}, logits.data(), error)) return fail(error);
  std::printf("rill logits: %s backend (%s), %s %s, %d tokens, vocab %d: weights %llu bytes (%llu read in place "
              "from the file), load %.1f ms, logits %.2f ms\n",
              rill_context_backend_name(h.ctx), rill_context_device_name(h.ctx), info.model_type,
              rill_dtype_name(info.dtype), tokens, info.vocab_size, static_cast<unsigned long long>(info.weight_bytes),
              static_cast<unsigned long long>(info.weight_bytes_mapped), load_seconds * 1e3, run_seconds * 1e3);
  return 0;
}

}  // namespace rill_cli
