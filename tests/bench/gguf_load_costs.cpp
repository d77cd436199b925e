// What loading a model file costs on the CPU backend (one thread unless
// given), its
// tensors read in place from the file's map or copied
// (rill_lm_load_options.copy_weights): the weight bytes rill reports, the
// seconds of the load and of the first and second logits of 8 tokens (the
// first reads every weight for the first time: in place, that pages the file
// in), and the process's peak resident memory (VmHWM), allocated memory
// (RssAnon) and file pages (RssFile) from /proc/self/status after the load
// and after the logits; then the tokens per second of 64 decode steps. Run it
// once per setting, alternating: the peak is the process's, and the times
// depend on the page cache and the machine's load.
//
//   gguf_load_costs <model.gguf or folder> copy|map [threads]
//
// Not a test; docs/GGUF.md has its figures.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "rill.h"

namespace {

void print_memory(const char* when) {
  std::ifstream status("/proc/self/status");
  std::printf("%-7s", when);
  for (std::string line; std::getline(status, line);) {
    for (const char* key : {"VmHWM:", "RssAnon:", "RssFile:"}) {
      if (line.compare(0, std::strlen(key), key) == 0) {
        std::printf("  %s %.0f MiB", key, std::stod(line.substr(std::strlen(key))) / 1024.0);
      }
    }
  }
  std::printf("\n");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int fail(const char* what) {
  std::fprintf(stderr, "gguf_load_costs: %s: %s\n", what, rill_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool usage = argc < 3 || argc > 4 || (std::strcmp(argv[2], "copy") != 0 && std::strcmp(argv[2], "map") != 0);
  const int threads = argc == 4 ? std::atoi(argv[3]) : 1;
  if (usage || threads < 1) {
    std::fprintf(stderr, "usage: gguf_load_costs <model.gguf or folder> copy|map [threads, default 1]\n");
    return 2;
  }
  const std::string config = "[runtime]\nbackend = \"cpu\"\n[backend.cpu]\nthreads = " + std::to_string(threads) + "\n";
  rill_context* ctx = nullptr;
  if (rill_context_create(config.c_str(), &ctx) != RILL_OK) {
    return fail("rill_context_create");
  }
  rill_lm_load_options options;
  rill_lm_load_options_init(&options);
  options.copy_weights = std::strcmp(argv[2], "copy") == 0 ? 1u : 0u;
  rill_lm* lm = nullptr;
  auto start = std::chrono::steady_clock::now();
  if (rill_lm_load(ctx, argv[1], &options, &lm) != RILL_OK) return fail("rill_lm_load");
  const double load = seconds_since(start);
  rill_lm_info info{};
  info.struct_size = sizeof info;
  if (rill_lm_get_info(lm, &info) != RILL_OK) return fail("rill_lm_get_info");
  std::printf("weights %.0f MiB, of which mapped %.0f MiB\n", static_cast<double>(info.weight_bytes) / 1048576.0,
              static_cast<double>(info.weight_bytes_mapped) / 1048576.0);
  print_memory("loaded");
  const int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> logits(8 * static_cast<size_t>(info.vocab_size));
  double logits_seconds[2];
  for (double& t : logits_seconds) {
    start = std::chrono::steady_clock::now();
    if (rill_lm_logits(lm, nullptr, 1, 8, ids, 0, logits.data(), logits.size()) != RILL_OK) {
      return fail("rill_lm_logits");
    }
    t = seconds_since(start);
  }
  print_memory("ran");
  // Decode: the 8 tokens into a cache, then one token at a time.
  constexpr int32_t kDecodeSteps = 64;
  rill_kv_cache* cache = nullptr;
  if (rill_kv_cache_create(rill_lm_model(lm), 1, 8 + kDecodeSteps, &cache) != RILL_OK) {
    return fail("rill_kv_cache_create");
  }
  if (rill_lm_logits(lm, cache, 1, 8, ids, 1, logits.data(), static_cast<size_t>(info.vocab_size)) != RILL_OK) {
    return fail("rill_lm_logits");
  }
  start = std::chrono::steady_clock::now();
  for (int32_t step = 0; step < kDecodeSteps; ++step) {
    const int32_t id = 1 + step % 8;
    if (rill_lm_logits(lm, cache, 1, 1, &id, 1, logits.data(), static_cast<size_t>(info.vocab_size)) != RILL_OK) {
      return fail("rill_lm_logits");
    }
  }
  const double decode = seconds_since(start);
  rill_kv_cache_destroy(cache);
  std::printf("seconds: load %.3f, first logits %.3f, second logits %.3f; decode %.1f tokens/s\n", load,
              logits_seconds[0], logits_seconds[1], kDecodeSteps / decode);
  rill_lm_destroy(lm);
  rill_context_destroy(ctx);
  return 0;
}
