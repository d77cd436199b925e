#include "config.h"

#include <string_view>
#include <toml++/toml.h>

#include "errors.h"

namespace rill {
namespace {

constexpr int64_t kMaxThreads = 65536;

// Thrown inside this file only; parse_config turns it into RILL_ERROR_CONFIG.
struct ConfigError {
  std::string message;
};

std::string where(const toml::source_region& region) {
  return std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
}

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

class Checker {
 public:
  explicit Checker(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void error_at(const toml::source_region& region, const std::string& text) const {
    throw ConfigError{source_ + ":" + where(region) + ": " + text};
  }

  // Rejects keys of table not listed in allowed.
  void only_keys(const toml::table& table, const std::string& prefix,
                 std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, value] : table) {
      bool known = false;
      for (std::string_view a : allowed) known = known || key.str() == a;
      if (!known) {
        std::string list;
        for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        error_at(key.source(), "unknown key '" + prefix + std::string(key.str()) + "'; expected one of: " + list);
      }
    }
  }

  const toml::table* table_at(const toml::table& parent, std::string_view key, const std::string& full) const {
    const toml::node* node = parent.get(key);
    if (node == nullptr) return nullptr;
    if (!node->is_table()) error_at(node->source(), "'" + full + "' must be a table, got " + type_name(*node));
    return node->as_table();
  }

  [[noreturn]] void wrong_type(const toml::node& node, const std::string& key, const std::string& expected) const {
    error_at(node.source(), "'" + key + "': expected " + expected + ", got " + type_name(node));
  }

  std::string backend_name(const toml::node& node, const std::string& key, bool allow_auto) const {
    if (!node.is_string()) wrong_type(node, key, "a string");
    const std::string value = node.as_string()->get();
    if (allow_auto && value == "auto") return value;
    if (!is_backend_identifier(value) || value == "auto") {
      error_at(node.source(), "'" + key + "': expected " + std::string(allow_auto ? "\"auto\" or " : "") +
                                  "a backend name (cpu, cuda, vulkan, or a plugin name of [a-z0-9_]), got \"" +
                                  value + "\"");
    }
    return value;
  }

  DeviceChoice device(const toml::node& node, const std::string& key, bool allow_name) const {
    DeviceChoice choice;
    choice.explicit_choice = true;
    if (const auto* integer = node.as_integer()) {
      if (integer->get() < 0 || integer->get() > INT32_MAX) {
        error_at(node.source(), "'" + key + "': expected a device index >= 0, got " + std::to_string(integer->get()));
      }
      choice.index = integer->get();
      return choice;
    }
    if (allow_name && node.is_string()) {
      choice.name = node.as_string()->get();
      if (choice.name.empty()) {
        error_at(node.source(), "'" + key + "': expected a non-empty part of a device name, got \"\"");
      }
      return choice;
    }
    wrong_type(node, key, allow_name ? "an integer index or a device name" : "an integer index");
  }

 private:
  std::string source_;
};

void read_runtime(const Checker& check, const toml::table& runtime, Config& config) {
  check.only_keys(runtime, "runtime.", {"backend", "prefer", "plugin_dir"});
  if (const toml::node* node = runtime.get("backend")) config.backend = check.backend_name(*node, "runtime.backend", true);
  if (const toml::node* node = runtime.get("prefer")) {
    const toml::array* array = node->as_array();
    if (array == nullptr) check.wrong_type(*node, "runtime.prefer", "an array of backend names");
    if (array->empty()) {
      check.error_at(node->source(), "'runtime.prefer': expected at least one backend name, got an empty array");
    }
    std::vector<std::string> prefer;
    for (const toml::node& item : *array) {
      std::string name = check.backend_name(item, "runtime.prefer", false);
      for (const std::string& seen : prefer) {
        if (seen == name) check.error_at(item.source(), "'runtime.prefer': \"" + name + "\" is listed twice");
      }
      prefer.push_back(std::move(name));
    }
    config.prefer = std::move(prefer);
  }
  if (const toml::node* node = runtime.get("plugin_dir")) {
    if (!node->is_string()) check.wrong_type(*node, "runtime.plugin_dir", "a string");
    config.plugin_dir = node->as_string()->get();
    if (config.plugin_dir.empty()) {
      check.error_at(node->source(), "'runtime.plugin_dir': expected a folder path, got \"\"");
    }
  }
}

void read_backends(const Checker& check, const toml::table& backends, Config& config) {
  check.only_keys(backends, "backend.", {"cpu", "cuda", "vulkan"});
  if (const toml::table* cpu = check.table_at(backends, "cpu", "backend.cpu")) {
    check.only_keys(*cpu, "backend.cpu.", {"threads"});
    if (const toml::node* node = cpu->get("threads")) {
      const auto* integer = node->as_integer();
      if (integer == nullptr) check.wrong_type(*node, "backend.cpu.threads", "an integer");
      if (integer->get() < 0 || integer->get() > kMaxThreads) {
        check.error_at(node->source(), "'backend.cpu.threads': expected 0 (all cores) to " +
                                           std::to_string(kMaxThreads) + ", got " + std::to_string(integer->get()));
      }
      config.cpu_threads = static_cast<uint32_t>(integer->get());
    }
  }
  if (const toml::table* cuda = check.table_at(backends, "cuda", "backend.cuda")) {
    check.only_keys(*cuda, "backend.cuda.", {"device", "tf32"});
    if (const toml::node* node = cuda->get("device")) config.cuda_device = check.device(*node, "backend.cuda.device", false);
    if (const toml::node* node = cuda->get("tf32")) {
      if (!node->is_boolean()) check.wrong_type(*node, "backend.cuda.tf32", "a boolean");
      config.cuda_tf32 = node->as_boolean()->get();
    }
  }
  if (const toml::table* vulkan = check.table_at(backends, "vulkan", "backend.vulkan")) {
    check.only_keys(*vulkan, "backend.vulkan.", {"device"});
    if (const toml::node* node = vulkan->get("device")) {
      config.vulkan_device = check.device(*node, "backend.vulkan.device", true);
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
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return fail(RILL_ERROR_CONFIG, std::string(function) + ": " + source + ":" + where(e.source()) +
                                       ": TOML syntax error: " + std::string(e.description()));
  }
  const Checker check(source);
  try {
    check.only_keys(root, "", {"runtime", "backend", "model"});  // [model]: rill_model_desc_from_toml
    if (const toml::table* runtime = check.table_at(root, "runtime", "runtime")) read_runtime(check, *runtime, config);
    if (const toml::table* backends = check.table_at(root, "backend", "backend")) read_backends(check, *backends, config);
  } catch (const ConfigError& e) {
    return fail(RILL_ERROR_CONFIG, std::string(function) + ": " + e.message);
  }
  out = std::move(config);
  return RILL_OK;
}

}  // namespace rill
