// `rill info [--config FILE]`: prints the version, every backend with its
// availability (and the reason when unavailable) and the devices it found.
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
               "usage: rill info [--config FILE]\n\n"
               "Prints the rill version, each backend (cpu, cuda, vulkan and any plugin the config\n"
               "names) with its availability or the reason it is unavailable, and its devices.\n"
               "  --config FILE   TOML config whose [runtime] plugin_dir is searched for plugins\n");
}

}  // namespace

int info_main(int argc, char** argv) {
  RuntimeOptions runtime;  // only --config: info has no backend to choose
  for (int i = 1; i < argc; ++i) {
    if (is_help_option(argv[i])) {
      print_help(stdout);
      return 0;
    }
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      runtime.config_path = argv[++i];
      continue;
    }
    std::fprintf(stderr, "rill info: unexpected argument '%s'\n", argv[i]);
    print_help(stderr);
    return 2;
  }
  std::string config;
  if (const int code = runtime.config_text("info", config)) return code;
  size_t required = 0;
  rill_status status = rill_info_report(config.c_str(), nullptr, 0, &required);
  std::vector<char> report;
  if (status == RILL_OK) {
    report.resize(required);
    status = rill_info_report(config.c_str(), report.data(), report.size(), &required);
  }
  if (status != RILL_OK) {
    // The library knows the config only as text: name the file it came from.
    if (runtime.config_path != nullptr) std::fprintf(stderr, "rill info: in %s:\n", runtime.config_path);
    std::fprintf(stderr, "rill info: %s (%s)\n", rill_last_error(), rill_status_string(status));
    return 1;
  }
  std::fputs(report.data(), stdout);
  return 0;
}

}  // namespace rill_cli
