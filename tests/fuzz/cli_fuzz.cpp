// The command line of `rill`: the input, split at NUL bytes, is the argument
// list after the program name. `bench` and `demo` are left out: a command
// line they accept starts a run of seconds, and the only file they read is
// the runtime TOML, which runtime_toml_fuzz covers.
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = {"rill"};
  std::string current;
  for (size_t i = 0; i < size && args.size() < 24; ++i) {
    if (data[i] == '\0') {
      args.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  if (!current.empty() && args.size() < 24) args.push_back(current);
  if (args.size() > 1 && (args[1] == "bench" || args[1] == "demo")) return 0;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  (void)rill_cli::dispatch(static_cast<int>(args.size()), argv.data());
  return 0;
}
