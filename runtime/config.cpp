#include "config.h"

#include <string_view>

#include "errors.h"
#include "toml_checks.h"

namespace rill {
namespace {

// The device a [backend.<name>] table asks for: an index, or a part of a
// device's name.
DeviceChoice device(const TomlChecker& check, const toml::node& node, const std::string& key) {
  DeviceChoice choice;
  choice.explicit_choice = true;
  choice.where = check.where(node);
  if (node.is_integer()) {
    choice.index = check.integer(node, key, 0, INT32_MAX);
    return choice;
  }
  if (node.is_string()) {
    choice.name = check.nonempty_string(node, key, "a non-empty part of a device name");
    return choice;
  }
  check.wrong_type(node, key, "an integer index or a part of a device name");
}

// A backend's own key, typed for rill_backend_option.
BackendOptionValue backend_option(const TomlChecker& check, const toml::key& key, const toml::node& node,
                                  const std::string& full) {
  BackendOptionValue option;
  option.key = std::string(key.str());
  option.where = check.where(key.source());
  if (const auto* boolean = node.as_boolean()) {
    option.type = RILL_BACKEND_OPTION_BOOL;
    option.int_value = boolean->get() ? 1 : 0;
  } else if (const auto* integer = node.as_integer()) {
    option.type = RILL_BACKEND_OPTION_INT;
    option.int_value = integer->get();
  } else if (const auto* real = node.as_floating_point()) {
    option.type = RILL_BACKEND_OPTION_FLOAT;
    option.float_value = real->get();
  } else if (const auto* text = node.as_string()) {
    option.type = RILL_BACKEND_OPTION_STRING;
    option.string_value = text->get();
    // The backend receives a C string: a NUL inside would cut it short.
    if (option.string_value.find('\0') != std::string::npos) {
      check.error_at(node.source(), "'" + full + "': expected a string without NUL characters");
    }
  } else {
    check.wrong_type(node, full, "a boolean, an integer, a float or a string");
  }
  return option;
}

std::string backend_name(const TomlChecker& check, const toml::node& node, const std::string& key, bool allow_auto) {
  if (!node.is_string()) check.wrong_type(node, key, "a string");
  const std::string value = node.as_string()->get();
  if (allow_auto && value == "auto") return value;
  if (!is_backend_identifier(value) || value == "auto") {
    check.error_at(node.source(), "'" + key + "': expected " + std::string(allow_auto ? "\"auto\" or " : "") +
                                      "a backend name (cpu, cuda, vulkan, or a plugin name of [a-z0-9_]), got \"" +
                                      value + "\"");
  }
  return value;
}

void read_runtime(const TomlChecker& check, const toml::table& runtime, Config& config) {
  check.only_keys(runtime, "runtime.", {"backend", "prefer", "plugin_dir"});
  if (const toml::node* node = runtime.get("backend")) config.backend = backend_name(check, *node, "runtime.backend", true);
  if (const toml::node* node = runtime.get("prefer")) {
    const toml::array* array = node->as_array();
    if (array == nullptr) check.wrong_type(*node, "runtime.prefer", "an array of backend names");
    if (array->empty()) {
      check.error_at(node->source(), "'runtime.prefer': expected at least one backend name, got an empty array");
    }
    std::vector<std::string> prefer;
    for (const toml::node& item : *array) {
      std::string name = backend_name(check, item, "runtime.prefer", false);
      for (const std::string& seen : prefer) {
        if (seen == name) check.error_at(item.source(), "'runtime.prefer': \"" + name + "\" is listed twice");
      }
      prefer.push_back(std::move(name));
    }
    config.prefer = std::move(prefer);
  }
  if (const toml::node* node = runtime.get("plugin_dir")) {
    config.plugin_dir = check.nonempty_string(*node, "runtime.plugin_dir", "a folder path");
  }
}

// Every [backend.<name>] table, for any backend name: `device` is read here,
// the other keys are typed and left to the backend to check.
void read_backends(const TomlChecker& check, const toml::table& backends, Config& config) {
  for (const auto& entry : backends) {
    const toml::key& name_key = entry.first;
    const std::string name(name_key.str());
    const std::string full = "backend." + name;
    if (!is_backend_identifier(name)) {
      check.error_at(name_key.source(), "'" + full + "': expected a backend name of [a-z0-9_], got \"" + name + "\"");
    }
    const toml::table* keys = check.table_at(backends, name, full);
    BackendTable& table = config.backends[name];
    table.where = check.where(*keys);
    for (const auto& [key, value] : *keys) {
      const std::string key_full = full + "." + std::string(key.str());
      if (key.str() == "device") {
        table.device = device(check, value, key_full);
      } else {
        table.options.push_back(backend_option(check, key, value, key_full));
      }
    }
  }
}

}  // namespace

const BackendTable& Config::backend_table(const std::string& name) const {
  static const BackendTable kEmpty;
  const auto found = backends.find(name);
  return found != backends.end() ? found->second : kEmpty;
}

bool is_backend_identifier(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

rill_status parse_config(std::string_view text, const std::string& source, const char* function, Config& out) {
  Config config;
  toml::table root;
  const rill_status parsed = parse_toml(text, source, function, root);
  if (parsed != RILL_OK) return parsed;
  const TomlChecker check(source);
  try {
    check.only_keys(root, "", {"runtime", "backend", "model"});  // [model]: rill_model_desc_from_toml
    if (const toml::table* runtime = check.table_at(root, "runtime", "runtime")) read_runtime(check, *runtime, config);
    if (const toml::table* backends = check.table_at(root, "backend", "backend")) read_backends(check, *backends, config);
  } catch (const TomlError& e) {
    return fail(RILL_ERROR_CONFIG, std::string(function) + ": " + e.message);
  }
  out = std::move(config);
  return RILL_OK;
}

}  // namespace rill
