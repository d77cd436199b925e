// The runtime's configuration, parsed from TOML text with toml++ and checked
// strictly: unknown keys, wrong types and bad values are errors that name the
// key and its line:column. The keys of a [backend.<name>] table other than
// `device` are only typed here: the backend itself checks them
// (backend_options.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rill_backend.h"

namespace rill {

// Which device of a backend the config asks for: `device` in its
// [backend.<name>] table, matched by the runtime (backend_selection.cpp).
struct DeviceChoice {
  bool explicit_choice = false;  // false: the config left it to the runtime
  int64_t index = 0;             // used when name is empty
  std::string name;              // non-empty: a part of the device's name, any case
  std::string where;             // "source:line:column" of the value, for messages
};

// One key of a [backend.<name>] table other than `device`, typed as the
// backend receives it (rill_backend_option).
struct BackendOptionValue {
  std::string key;
  rill_backend_option_type type = RILL_BACKEND_OPTION_BOOL;
  int64_t int_value = 0;
  double float_value = 0;
  std::string string_value;
  std::string where;  // "source:line:column" of the key, for messages
};

// A [backend.<name>] table. Only `device` is the runtime's; the backend
// checks and reads the other keys.
struct BackendTable {
  std::string where;  // "source:line:column" of the table
  DeviceChoice device;
  std::vector<BackendOptionValue> options;  // sorted by key, as toml++ keeps a table
};

struct Config {
  std::string backend = "auto";
  std::vector<std::string> prefer = {"cuda", "vulkan", "cpu"};
  std::string plugin_dir;                       // empty: not set
  std::map<std::string, BackendTable> backends;  // by backend name

  // The [backend.<name>] table, or an empty one when the config has none.
  const BackendTable& backend_table(const std::string& name) const;
};

// Parses text (empty gives the defaults). source names the text in messages
// (a file path, or "config"); function prefixes every message.
// Returns RILL_OK, or RILL_ERROR_CONFIG with rill_last_error() set.
rill_status parse_config(std::string_view text, const std::string& source, const char* function, Config& out);

// True for a plain backend identifier: [a-z0-9_]+.
bool is_backend_identifier(const std::string& name);

}  // namespace rill
