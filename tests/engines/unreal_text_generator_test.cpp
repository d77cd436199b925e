// Runs the Unreal example's FRillTextGenerator (examples/engines/unreal),
// compiled without exceptions as Unreal builds, on the CPU backend with the
// demo model, one 4 ms budget per Tick, and checks that its text is what
// `rill generate` prints for the same prompt, seed and token budget (the text
// itself is checked against transformers by tests/generate).
//
// usage: unreal_text_generator_test <model folder> <rill tool>
#include <cstdio>
#include <string>

#include "RillTextGenerator.h"

namespace {

const char kPrompt[] = "A fool and his money";

std::string trim_end(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <model folder> <rill tool>\n", argv[0]);
    return 2;
  }
  FRillTextGenerator generator;
  if (!generator.Load(argv[1], "cpu", kPrompt, 2, 24)) {
    std::fprintf(stderr, "Load: %s\n", generator.Error().c_str());
    return 1;
  }
  int frames = 0;
  while (!generator.Done()) {
    if (!generator.Tick(4.0)) {
      std::fprintf(stderr, "Tick: %s\n", generator.Error().c_str());
      return 1;
    }
    ++frames;
  }
  const std::string command = std::string("'") + argv[2] + "' generate --model '" + argv[1] + "' --prompt '" +
                              kPrompt + "' --seed 2 --backend cpu --max-new-tokens 24";
  std::FILE* tool = popen(command.c_str(), "r");
  if (tool == nullptr) {
    std::perror("popen");
    return 1;
  }
  std::string expected;
  char buffer[256];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, tool)) > 0;) expected.append(buffer, n);
  if (pclose(tool) != 0) {
    std::fprintf(stderr, "%s failed\n", command.c_str());
    return 1;
  }
  std::printf("%d frames: %s\n", frames, generator.Text().c_str());
  if (trim_end(generator.Text()) != trim_end(expected)) {
    std::fprintf(stderr, "FRillTextGenerator wrote \"%s\"; rill generate printed \"%s\"\n", generator.Text().c_str(),
                 expected.c_str());
    return 1;
  }
  return 0;
}
