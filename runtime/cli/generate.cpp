// `rill generate`: generates tokens from a Hugging Face model folder with a
// rill_session, streaming them to stdout as they come.

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "platform.h"
#include "rill.h"

namespace rill_cli {
namespace {

void print_help(std::FILE* to) {
  std::fprintf(to,
               "usage: rill generate --model PATH (--prompt TEXT | --ids \"1 2 3\") [--max-new-tokens N]\n"
               "                     [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--seed S]\n"
               "                     [--backend NAME | --config FILE] [--dtype f32|f16|bf16] [--print-ids]\n"
               "                     [--weight-format q8_0|q4_0|q5_0|q5_1|q4_k|q5_k|q6_k|f32|f16|bf16] [--stats]\n"
               "                     [--copy-weights]\n\n"
               "Loads the Hugging Face model folder PATH, runs the prompt through it and streams the\n"
               "generated text to stdout until an end-of-sequence id or the token budget.\n"
               "  --prompt TEXT        the prompt, encoded with the folder's tokenizer\n"
               "  --ids \"1 2 3\"        the prompt as token ids\n"
               "  --max-new-tokens N   most tokens to generate (default 256)\n"
               "  --temperature T      0 is greedy; --temperature, --top-k, --top-p and --min-p default to\n"
               "  --top-k K            the folder's generation_config.json (greedy without do_sample)\n"
               "  --top-p P\n"
               "  --min-p P\n"
               "  --seed S             the sampler's seed (default 0): the same seed, the same tokens\n"
               "  --backend NAME       cpu, vulkan, cuda, ... (default: the library's choice)\n"
               "  --config FILE        TOML config (see rill.h), e.g. the CPU backend's threads\n");
  LoadOptions::print_help(to, 23);
  std::fprintf(to,
               "  --print-ids          print only the generated token ids, space-separated, on one line\n"
               "  --stats              print the timings line below on stderr even when it is not a terminal\n"
               "On a terminal, stderr shows progress and, at the end, the time to first token (the prompt's\n"
               "forward passes and the first token's sampling; loading excluded), the prefill speed\n"
               "(prompt tokens over that time) and the decode speed (tokens after the first, over the\n"
               "time after the first):\n"
               "  prompt: P tokens, time to first token S s (R tokens/s); decode: N tokens, R tokens/s\n");
}

int fail_status(const std::string& what, rill_status status) {
  std::fprintf(stderr, "rill generate: %s: %s: %s\n", what.c_str(), rill_status_string(status), rill_last_error());
  return 1;
}

bool parse_float_option(const char* option, const char* value, float min, float max, float& out) {
  char* end = nullptr;
  const float v = std::strtof(value, &end);
  if (end == value || *end != '\0' || !std::isfinite(v) || v < min || v > max) {
    std::fprintf(stderr, "rill generate: %s: expected a number from %g to %g, got '%s'\n", option, min, max, value);
    return false;
  }
  out = v;
  return true;
}

bool parse_seed(const char* value, uint64_t& out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value, &end, 10);
  if (end == value || *end != '\0' || value[0] == '-') {
    std::fprintf(stderr, "rill generate: --seed: expected an integer from 0 to %llu, got '%s'\n", ULLONG_MAX, value);
    return false;
  }
  out = v;
  return true;
}

// What the token callback needs: the output mode and the timings.
struct Stream {
  bool print_ids = false;
  bool progress_shown = false;  // a "prompt: n/m tokens" line on the terminal, to clear before the text
  int32_t count = 0;
  std::chrono::steady_clock::time_point first_token;
};

int on_token(void* user_data, int32_t token, const char* text, size_t text_len) {
  auto& stream = *static_cast<Stream*>(user_data);
  if (stream.count++ == 0) {
    stream.first_token = std::chrono::steady_clock::now();
    if (stream.progress_shown) std::fprintf(stderr, "\r\033[K");  // the text starts where the progress was
  }
  if (stream.print_ids || text == nullptr) {
    std::printf(stream.count == 1 ? "%d" : " %d", token);
  } else {
    std::fwrite(text, 1, text_len, stdout);
  }
  std::fflush(stdout);
  return 0;
}

// The handles of one run, released in order.
struct Handles {
  rill_context* ctx = nullptr;
  rill_lm* lm = nullptr;
  rill_tokenizer* tokenizer = nullptr;
  rill_session* session = nullptr;
  ~Handles() {
    rill_session_destroy(session);
    rill_tokenizer_destroy(tokenizer);
    rill_lm_destroy(lm);
    rill_context_destroy(ctx);
  }
};

}  // namespace

int generate_main(int argc, char** argv) {
  std::string model_path, ids_text;
  const char* prompt = nullptr;
  LoadOptions load;
  int max_new_tokens = 256;
  bool print_ids = false;
  bool stats = false;
  RuntimeOptions runtime;
  // Sampling flags: set only where given, over generation_config.json's defaults.
  float temperature = -1.0f, top_p = -1.0f, min_p = -1.0f;
  int top_k = -1;
  uint64_t seed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (is_help_option(argv[i])) {
      print_help(stdout);
      return 0;
    }
    if (arg == "--print-ids") {
      print_ids = true;
      continue;
    }
    if (arg == "--stats") {
      stats = true;
      continue;
    }
    if (load.take(argc, argv, i)) continue;
    if ((arg == "--backend" || arg == "--config") && runtime.take(argc, argv, i)) continue;
    if (i + 1 >= argc) {
      std::fprintf(stderr, "rill generate: %s: %s\n", argv[i],
                   arg.rfind("--", 0) == 0 ? "expected a value after it" : "unknown argument");
      print_help(stderr);
      return 2;
    }
    const char* value = argv[++i];
    bool ok = true;
    if (arg == "--model") model_path = value;
    else if (arg == "--prompt") prompt = value;
    else if (arg == "--ids") ids_text = value;
    else if (arg == "--max-new-tokens") ok = parse_int_option("generate", "--max-new-tokens", value, 1, INT32_MAX, max_new_tokens);
    else if (arg == "--temperature") ok = parse_float_option("--temperature", value, 0.0f, 1e6f, temperature);
    else if (arg == "--top-k") ok = parse_int_option("generate", "--top-k", value, 0, INT32_MAX, top_k);
    else if (arg == "--top-p") ok = parse_float_option("--top-p", value, 1e-6f, 1.0f, top_p);
    else if (arg == "--min-p") ok = parse_float_option("--min-p", value, 0.0f, 1.0f, min_p);
    else if (arg == "--seed") ok = parse_seed(value, seed);
    else {
      std::fprintf(stderr, "rill generate: unknown option '%s'\n", argv[i - 1]);
      print_help(stderr);
      return 2;
    }
    if (!ok) return 2;
  }
  if (model_path.empty() || (prompt == nullptr) == ids_text.empty()) {
    std::fprintf(stderr, "rill generate: expected --model and one of --prompt or --ids\n");
    print_help(stderr);
    return 2;
  }
  rill_lm_load_options load_options;
  rill_lm_load_options_init(&load_options);
  if (!load.apply("generate", load_options)) return 2;
  std::vector<int32_t> ids;
  if (!ids_text.empty() && !parse_ids_option("generate", ids_text, ids)) return 2;

  std::string config;
  if (const int code = runtime.config_text("generate", config); code != 0) return code;
  const bool terminal = rill::platform::stderr_is_terminal();
  Handles h;
  rill_status status = rill_context_create(config.c_str(), &h.ctx);
  if (status != RILL_OK) return fail_status("context", status);
  const auto load_start = std::chrono::steady_clock::now();
  if (terminal) std::fprintf(stderr, "loading %s ...", model_path.c_str());
  status = rill_lm_load(h.ctx, model_path.c_str(), &load_options, &h.lm);
  if (terminal) std::fprintf(stderr, " %.2f s\n", seconds_since(load_start));
  if (status != RILL_OK) return fail_status(model_path, status);
  // The folder's tokenizer (a GGUF file's own), for --prompt and for printing text.
  const bool gguf = model_path.size() > 5 && model_path.compare(model_path.size() - 5, 5, ".gguf") == 0;
  const std::string tokenizer_path = gguf ? model_path : model_path + "/tokenizer.json";
  // Whatever is there goes to the reader, which refuses what is not a file;
  // opening it here would wait forever on a named pipe.
  std::error_code ignored;
  if (std::filesystem::exists(std::filesystem::u8path(tokenizer_path), ignored)) {
    status = rill_tokenizer_load(model_path.c_str(), &h.tokenizer);
    if (status != RILL_OK) return fail_status(tokenizer_path, status);
  } else if (prompt != nullptr) {
    std::fprintf(stderr, "rill generate: --prompt: %s has no tokenizer.json; give the prompt with --ids\n",
                 model_path.c_str());
    return 1;
  }
  if (prompt != nullptr) {
    size_t count = 0;
    rill_tokenizer_encode(h.tokenizer, prompt, std::strlen(prompt), 1, nullptr, 0, &count);
    ids.resize(count);
    status = rill_tokenizer_encode(h.tokenizer, prompt, std::strlen(prompt), 1, ids.data(), ids.size(), &count);
    if (status != RILL_OK) return fail_status("--prompt", status);
  }

  rill_session_options options;
  rill_session_options_init(&options, h.lm);
  options.max_new_tokens = max_new_tokens;
  // Room for the prompt and every new token, within the model's positions.
  const int64_t needed = static_cast<int64_t>(ids.size()) + max_new_tokens;
  if (needed < options.capacity) options.capacity = static_cast<int32_t>(needed);
  if (temperature >= 0.0f) options.sampler.temperature = temperature;
  if (top_k >= 0) options.sampler.top_k = top_k;
  if (top_p >= 0.0f) options.sampler.top_p = top_p;
  if (min_p >= 0.0f) options.sampler.min_p = min_p;
  options.sampler.seed = seed;
  status = rill_session_create(h.lm, &options, &h.session);
  if (status != RILL_OK) return fail_status("session", status);
  if (h.tokenizer != nullptr && !print_ids) {
    status = rill_session_set_tokenizer(h.session, h.tokenizer);
    if (status != RILL_OK) return fail_status("tokenizer", status);
  }
  status = rill_session_append_ids(h.session, ids.data(), ids.size());
  if (status != RILL_OK) return fail_status("prompt", status);

  // One forward pass per step, so that the prompt's progress can be shown.
  Stream stream;
  stream.print_ids = print_ids;
  const auto start = std::chrono::steady_clock::now();
  rill_stop_reason reason = RILL_STOP_NONE;
  int32_t prefilled = 0;
  while (reason == RILL_STOP_NONE) {
    status = rill_session_step(h.session, 1, on_token, &stream, nullptr, &reason);
    if (status != RILL_OK) {
      std::printf("\n");
      return fail_status("generate", status);
    }
    if (terminal && stream.count == 0) {
      prefilled = std::min<int32_t>(static_cast<int32_t>(ids.size()), prefilled + options.prefill_chunk);
      std::fprintf(stderr, "\rprompt: %d/%zu tokens", prefilled, ids.size());
      stream.progress_shown = true;
    }
  }
  std::printf("\n");
  std::fflush(stdout);  // the text's end before the timings on stderr, also through a pipe
  if (terminal || stats) {
    const double first = std::chrono::duration<double>(stream.first_token - start).count();
    const double decode = seconds_since(stream.first_token);
    std::fprintf(stderr, "%sprompt: %zu tokens, time to first token %.3f s (%.1f tokens/s); "
                 "decode: %d tokens, %.1f tokens/s\n",
                 terminal ? "\r" : "", ids.size(), first, static_cast<double>(ids.size()) / first, stream.count - 1,
                 stream.count > 1 ? (stream.count - 1) / decode : 0.0);
  }
  return 0;
}

}  // namespace rill_cli
