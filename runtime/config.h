// The runtime's configuration, parsed from TOML text with toml++ and checked
// strictly: unknown keys, wrong types and bad values are errors that name the
// key and its line:column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rill.h"

namespace rill {

// Which device of a backend the config asks for.
struct DeviceChoice {
  bool explicit_choice = false;  // false: the config left it to the runtime
  int64_t index = 0;             // used when name is empty
  std::string name;              // non-empty: first device whose name contains it
};

struct Config {
  std::string backend = "auto";
  std::vector<std::string> prefer = {"cuda", "vulkan", "cpu"};
  std::string plugin_dir;  // empty: not set
  uint32_t cpu_threads = 0;
  DeviceChoice cuda_device;
  bool cuda_tf32 = false;
  DeviceChoice vulkan_device;
};

// Parses text (empty gives the defaults). source names the text in messages
// (a file path, or "config"); function prefixes every message.
// Returns RILL_OK, or RILL_ERROR_CONFIG with rill_last_error() set.
rill_status parse_config(std::string_view text, const std::string& source, const char* function, Config& out);

// True for a plain backend identifier: [a-z0-9_]+.
bool is_backend_identifier(const std::string& name);

}  // namespace rill
