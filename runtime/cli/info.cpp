// `rill info [--config FILE]`: prints the version, every backend with its
// availability (and the reason when unavailable) and the devices it found.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "rill.h"

namespace rill_cli {
namespace {

void print_help(std::FILE* to) {
  std::fprintf(to,
               "usage: rill info [--config FILE]\n\n"
               "Prints the rill version, each backend (cpu, cuda, vulkan and any plugin the config\n"
               "names) with its availability or the reason it is unavailable, and its devices.\n"
               "  --config FILE   TOML config whose [runtime] plugin_dir is searched for plugins\n");
}

bool read_text(const char* path, std::string& out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return false;
  out = text.str();
  return true;
}

}  // namespace

int info_main(int argc, char** argv) {
  const char* config_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      print_help(stdout);
      return 0;
    }
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      config_path = argv[++i];
      continue;
    }
    std::fprintf(stderr, "rill info: unexpected argument '%s'\n", argv[i]);
    print_help(stderr);
    return 2;
  }
  std::string config;
  if (config_path != nullptr && !read_text(config_path, config)) {
    std::fprintf(stderr, "rill info: cannot read config file '%s'\n", config_path);
    return 1;
  }
  size_t required = 0;
  rill_status status = rill_info_report(config.c_str(), nullptr, 0, &required);
  std::vector<char> report;
  if (status == RILL_OK) {
    report.resize(required);
    status = rill_info_report(config.c_str(), report.data(), report.size(), &required);
  }
  if (status != RILL_OK) {
    // The library knows the config only as text: name the file it came from.
    if (config_path != nullptr) std::fprintf(stderr, "rill info: in %s:\n", config_path);
    std::fprintf(stderr, "rill info: %s (%s)\n", rill_last_error(), rill_status_string(status));
    return 1;
  }
  std::fputs(report.data(), stdout);
  return 0;
}

}  // namespace rill_cli
