#include "toml_checks.h"

#include "errors.h"

namespace rill {

std::string toml_position(const toml::source_region& region) {
  return std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
}

const char* toml_type_name(const toml::node& node) {
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

rill_status parse_toml(std::string_view text, const std::string& source, const char* function, toml::table& out) {
  try {
    // No source path for toml++: its reader copies a path in a noexcept
    // constructor, so running out of memory there would terminate the process.
    // Messages name the source themselves.
    out = toml::parse(text);
  } catch (const toml::parse_error& e) {
    return fail(RILL_ERROR_CONFIG, std::string(function) + ": " + source + ":" + toml_position(e.source()) +
                                       ": TOML syntax error: " + std::string(e.description()));
  }
  return RILL_OK;
}

std::string TomlChecker::where(const toml::node& node) const { return where(node.source()); }

std::string TomlChecker::where(const toml::source_region& region) const {
  return source_ + ":" + toml_position(region);
}

void TomlChecker::error_at(const toml::source_region& region, const std::string& text) const {
  throw TomlError{source_ + ":" + toml_position(region) + ": " + text};
}

void TomlChecker::only_keys(const toml::table& table, const std::string& prefix,
                            std::initializer_list<std::string_view> allowed) const {
  for (const auto& [key, value] : table) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key.str() == a;
    if (known) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    error_at(key.source(), "unknown key '" + prefix + std::string(key.str()) + "'; expected one of: " + list);
  }
}

const toml::table* TomlChecker::table_at(const toml::table& parent, std::string_view key,
                                         const std::string& full) const {
  const toml::node* node = parent.get(key);
  if (node == nullptr) return nullptr;
  if (!node->is_table()) error_at(node->source(), "'" + full + "' must be a table, got " + toml_type_name(*node));
  return node->as_table();
}

void TomlChecker::wrong_type(const toml::node& node, const std::string& key, const std::string& expected) const {
  error_at(node.source(), "'" + key + "': expected " + expected + ", got " + toml_type_name(node));
}

int64_t TomlChecker::integer(const toml::node& node, const std::string& key, int64_t min, int64_t max) const {
  const auto* integer = node.as_integer();
  if (integer == nullptr) wrong_type(node, key, "an integer");
  if (integer->get() < min || integer->get() > max) {
    error_at(node.source(), "'" + key + "': expected " + std::to_string(min) + " to " + std::to_string(max) +
                                ", got " + std::to_string(integer->get()));
  }
  return integer->get();
}

double TomlChecker::number(const toml::node& node, const std::string& key) const {
  if (const auto* integer = node.as_integer()) return static_cast<double>(integer->get());
  if (const auto* real = node.as_floating_point()) return real->get();
  wrong_type(node, key, "a number");
}

bool TomlChecker::boolean(const toml::node& node, const std::string& key) const {
  if (!node.is_boolean()) wrong_type(node, key, "true or false");
  return node.as_boolean()->get();
}

std::string TomlChecker::nonempty_string(const toml::node& node, const std::string& key, const char* what) const {
  if (!node.is_string()) wrong_type(node, key, "a string");
  const std::string& value = node.as_string()->get();
  if (value.empty()) error_at(node.source(), "'" + key + "': expected " + what + ", got \"\"");
  return value;
}

}  // namespace rill
