#include "fuzz_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace rill_fuzz {

const std::string& scratch_dir() {
  // Never destroyed: the atexit handler that removes the folder runs after
  // the destructors of statics made before it was registered.
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/rill_fuzz_XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("rill fuzz: mkdtemp");
      std::abort();
    }
    // Removed at a normal exit; a crashing run leaves it for a look.
    std::atexit([] { std::filesystem::remove_all(scratch_dir()); });
    return new std::string(pattern);
  }();
  return *dir;
}

std::string write_scratch_file(const std::string& name, const void* bytes, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes, 1, size, f) != size || std::fclose(f) != 0) {
    std::perror(("rill fuzz: cannot write " + path).c_str());
    std::abort();
  }
  return path;
}

rill_context* cpu_context() {
  static rill_context* ctx = [] {
    rill_context* made = nullptr;
    if (rill_context_create("[runtime]\nbackend = \"cpu\"\n", &made) != RILL_OK) {
      std::fprintf(stderr, "rill fuzz: no CPU context: %s\n", rill_last_error());
      std::abort();
    }
    return made;
  }();
  return ctx;
}

}  // namespace rill_fuzz
