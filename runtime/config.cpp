#include "config.h"

#include <string_view>

#include "errors.h"
#include "toml_checks.h"

namespace rill {
namespace {

constexpr int64_t kMaxThreads = 65536;

// The device a [backend.<name>] table asks for: an index, or (allow_name) a
// part of a device's name.
DeviceChoice device(const TomlChecker& check, const toml::node& node, const std::string& key, bool allow_name) {
  DeviceChoice choice;
  choice.explicit_choice = true;
  if (node.is_integer()) {
    choice.index = check.integer(node, key, 0, INT32_MAX);
    return choice;
  }
  if (allow_name && node.is_string()) {
    choice.name = check.nonempty_string(node, key, "a non-empty part of a device name");
    return choice;
  }
  check.wrong_type(node, key, allow_name ? "an integer index or a device name" : "an integer index");
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

void read_backends(const TomlChecker& check, const toml::table& backends, Config& config) {
  check.only_keys(backends, "backend.", {"cpu", "cuda", "vulkan"});
  if (const toml::table* cpu = check.table_at(backends, "cpu", "backend.cpu")) {
    check.only_keys(*cpu, "backend.cpu.", {"threads"});
    if (const toml::node* node = cpu->get("threads")) {
      config.cpu_threads = static_cast<uint32_t>(check.integer(*node, "backend.cpu.threads", 0, kMaxThreads));
    }
  }
  if (const toml::table* cuda = check.table_at(backends, "cuda", "backend.cuda")) {
    check.only_keys(*cuda, "backend.cuda.", {"device", "tf32"});
    if (const toml::node* node = cuda->get("device")) config.cuda_device = device(check, *node, "backend.cuda.device", false);
    if (const toml::node* node = cuda->get("tf32")) {
      config.cuda_tf32 = check.boolean(*node, "backend.cuda.tf32");
    }
  }
  if (const toml::table* vulkan = check.table_at(backends, "vulkan", "backend.vulkan")) {
    check.only_keys(*vulkan, "backend.vulkan.", {"device"});
    if (const toml::node* node = vulkan->get("device")) {
      config.vulkan_device = device(check, *node, "backend.vulkan.device", true);
    }
  }
}

}  // namespace

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
