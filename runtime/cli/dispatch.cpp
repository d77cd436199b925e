// The `rill` command line: the table of subcommands and the dispatch to them.
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "rill.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*main)(int argc, char** argv);
};

const Command kCommands[] = {
    {"info", "version, backends with their availability, devices", rill_cli::info_main},
    {"bench", "time every op on a backend beside the machine's bandwidth", rill_cli::bench_main},
    {"demo", "a decoder stack's prefill and decode speed on the default backend, checked against the CPU", rill_cli::model_demo_main},
    {"run", "run hidden states (.npy) through a decoder stack (TOML + safetensors)", rill_cli::run_main},
    {"logits", "the logits (.npy) of token ids from a Hugging Face model folder", rill_cli::logits_main},
    {"tokenize", "the token ids of a text under a Hugging Face tokenizer (tokenizer.json)", rill_cli::tokenize_main},
    {"generate", "the main job: text generated from a Hugging Face model folder", rill_cli::generate_main},
    {"quantize", "a GGUF file's weight matrices quantized (q8_0 ... q6_k, q4_k_m) into a new GGUF", rill_cli::quantize_main},
};

void print_usage(std::FILE* to) {
  std::fprintf(to, "usage: rill <command> [options]   (rill <command> --help for its options)\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(to, "  %-8s %s\n", c.name, c.summary);
}

}  // namespace

int rill_cli::dispatch(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage(stdout);
    return 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    const unsigned v = rill_version_number();
    std::printf("rill %u.%u.%u\n", v / 10000, v / 100 % 100, v % 100);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) == 0) return c.main(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "rill: unknown command '%s'\n", argv[1]);
  print_usage(stderr);
  return 2;
}
