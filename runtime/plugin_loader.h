// Loads backend plugins: librill-<name>.so (rill-<name>.dll on Windows) searched
// in the config's plugin_dir, then each folder of RILL_PLUGIN_PATH (separated by
// ':', or ';' on Windows), then the folder holding librill itself.
// A plugin that loads is negotiated with, initialised, checked and cached for
// the life of the process; every failure is reported with its reason.
#pragma once

#include <string>

#include "backend_registry.h"

namespace rill {

// Returns the cached or newly loaded plugin backend called name, or nullptr with
// the reason (paths tried, the dynamic loader's text, what the plugin answered).
// Thread-safe.
const Backend* load_plugin(const std::string& name, const std::string& plugin_dir, std::string& reason);

}  // namespace rill
