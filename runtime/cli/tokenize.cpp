// `rill tokenize`: the ids of a text under a Hugging Face tokenizer, on one
// line, space-separated, with the special tokens its post-processor adds.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "rill.h"

namespace rill_cli {
namespace {

void print_help(std::FILE* to) {
  std::fprintf(to,
               "usage: rill tokenize --model PATH --text TEXT [--no-special]\n\n"
               "Prints the token ids of TEXT (UTF-8) on one line, space-separated.\n"
               "  --model PATH    a folder holding tokenizer.json (a Hugging Face model folder), or the file\n"
               "  --text TEXT     the text to encode\n"
               "  --no-special    leave out the special tokens the tokenizer's post-processor adds (a BOS, say)\n");
}

int fail(const std::string& message, int code) {
  std::fprintf(stderr, "rill tokenize: %s\n", message.c_str());
  return code;
}

}  // namespace

int tokenize_main(int argc, char** argv) {
  const char* model = nullptr;
  const char* text = nullptr;
  bool add_special = true;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (is_help_option(arg)) {
      print_help(stdout);
      return 0;
    }
    if (std::strcmp(arg, "--no-special") == 0) {
      add_special = false;
    } else if ((std::strcmp(arg, "--model") == 0 || std::strcmp(arg, "--text") == 0) && i + 1 < argc) {
      (std::strcmp(arg, "--model") == 0 ? model : text) = argv[++i];
    } else {
      print_help(stderr);
      return fail(std::string("unexpected argument '") + arg + "'", 2);
    }
  }
  if (model == nullptr || text == nullptr) {
    print_help(stderr);
    return fail(model == nullptr ? "--model PATH is required" : "--text TEXT is required", 2);
  }
  rill_tokenizer* tokenizer = nullptr;
  rill_status status = rill_tokenizer_load(model, &tokenizer);
  if (status != RILL_OK) return fail(std::string(rill_status_string(status)) + ": " + rill_last_error(), 1);
  size_t count = 0;
  std::vector<int32_t> ids;
  status = rill_tokenizer_encode(tokenizer, text, std::strlen(text), add_special ? 1 : 0, nullptr, 0, &count);
  if (status == RILL_OK) {
    ids.resize(count);
    status =
        rill_tokenizer_encode(tokenizer, text, std::strlen(text), add_special ? 1 : 0, ids.data(), ids.size(), &count);
  }
  rill_tokenizer_destroy(tokenizer);
  if (status != RILL_OK) return fail(std::string(rill_status_string(status)) + ": " + rill_last_error(), 1);
  std::string line;
  for (size_t i = 0; i < count; ++i) line += (i ? " " : "") + std::to_string(ids[i]);
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace rill_cli
